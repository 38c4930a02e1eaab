import { expect, it } from "vitest";
import { copyInSlices } from "../../src/engines/cooperativeWork.js";

const filled = (length: number, seed: number) => Uint8Array.from({ length }, (_, i) => (i * 31 + seed) & 0xff);

it("copies chunks one after another, across slice boundaries, and stops where the target ends", async () => {
  // Slices are 2 MiB: these chunks straddle them.
  const chunks = [filled(1_500_000, 1), filled(0, 2), filled(3_000_000, 3), filled(10, 4)];
  const whole = new Uint8Array(4_500_010);
  let offset = 0;
  for (const chunk of chunks) {
    whole.set(chunk, offset);
    offset += chunk.length;
  }
  const into = new Uint8Array(whole.length);
  expect(await copyInSlices(chunks, into)).toBe(whole.length);
  expect(Buffer.from(into).equals(Buffer.from(whole))).toBe(true);
  const shorter = new Uint8Array(2_000_001);
  expect(await copyInSlices(chunks, shorter)).toBe(2_000_001);
  expect(Buffer.from(shorter).equals(Buffer.from(whole.subarray(0, 2_000_001)))).toBe(true);
});

it("lets other callbacks run between slices, and stops on an abort", async () => {
  const chunks = [filled(8 << 20, 5)];
  let ranMeanwhile = false;
  setImmediate(() => (ranMeanwhile = true));
  const copying = copyInSlices(chunks, new Uint8Array(8 << 20));
  expect(ranMeanwhile).toBe(false);
  await copying;
  expect(ranMeanwhile).toBe(true);
  const abort = new AbortController();
  const stopped = copyInSlices(chunks, new Uint8Array(8 << 20), abort.signal);
  abort.abort();
  await expect(stopped).rejects.toThrow();
});
