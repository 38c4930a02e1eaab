import { pbkdf2 } from "node:crypto";
import { libuvPoolSize } from "../../src/engines/llama/threadsForBatch.js";

/**
 * Runs `request` while every thread of libuv's pool in this process (an in-process test server
 * runs in it) is busy for a while, as a long prompt's llama.cpp decode holds it; says whether it
 * was done before any pool thread was free again.
 */
export async function whilePoolBusy<T>(request: () => Promise<T>): Promise<{ result: T; beforeAnyFreed: boolean }> {
  const jobs = Array.from(
    { length: libuvPoolSize() },
    () => new Promise<void>((resolve, reject) => pbkdf2("p", "s", 1_000_000, 64, "sha512", (error) => (error ? reject(error) : resolve()))),
  );
  let freed = false;
  void Promise.race(jobs).then(() => {
    freed = true;
  });
  const result = await request();
  const beforeAnyFreed = !freed;
  await Promise.all(jobs);
  return { result, beforeAnyFreed };
}
