import { expect, it } from "vitest";
import { threadsForBatch } from "../../src/engines/llama/threadsForBatch.js";

it("leaves one core to Node for a lone token when llama.cpp's threads take every core, and uses them all otherwise", () => {
  const onTwoCores = threadsForBatch("auto", 2);
  expect(onTwoCores({ batchSize: 1, threads: 2 })).toBe(1);
  expect(onTwoCores({ batchSize: 2, threads: 2 })).toBe(2);
  expect(onTwoCores({ batchSize: 512, threads: 2 })).toBe(2);
  expect(onTwoCores({ batchSize: 1, threads: 1 })).toBe(1);
  const onSixteen = threadsForBatch("auto", 16);
  expect(onSixteen({ batchSize: 1, threads: 16 })).toBe(15);
  expect(onSixteen({ batchSize: 1, threads: 8 })).toBe(8);
  // A configured count, never above the context's.
  expect(threadsForBatch(3, 16)({ batchSize: 1, threads: 8 })).toBe(3);
  expect(threadsForBatch(12, 16)({ batchSize: 1, threads: 8 })).toBe(8);
  expect(threadsForBatch(3, 16)({ batchSize: 4, threads: 8 })).toBe(8);
});
