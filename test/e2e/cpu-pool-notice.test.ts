import { Writable } from "node:stream";
import { expect, it, vi } from "vitest";
import { createLogger } from "../../src/logger.js";
import { startTestServer, tinyChatEntry } from "../helpers/testServer.js";

/**
 * A server whose llama.cpp runs on the CPU from libuv's default pool (as `hearth serve` leaves it
 * where a GPU device exists but llama.cpp does not use it) says so once it has loaded the binding.
 * Vitest's workers have libuv's default pool, and test servers run on the CPU.
 */
it.skipIf(process.env.UV_THREADPOOL_SIZE !== undefined)("warns at start-up that llama.cpp on the CPU decodes from libuv's pool of several threads", async () => {
  let captured = "";
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      captured += chunk.toString();
      done();
    },
  });
  const server = await startTestServer({ logger: createLogger("warn", { destination: sink }), models: [tinyChatEntry()] });
  try {
    await vi.waitFor(() => expect(captured).toContain("llama.cpp runs on the CPU while libuv's thread pool has 4 threads"), { timeout: 20_000, interval: 50 });
    const line = JSON.parse(captured.split("\n").find((l) => l.includes("libuv's thread pool"))!) as { level: number; libuvThreads: number };
    expect(line).toMatchObject({ level: 40, libuvThreads: 4 });
  } finally {
    await server.stop();
  }
});
