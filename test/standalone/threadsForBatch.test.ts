import { expect, it } from "vitest";
import { cpuDecodePoolNotice, describeLibuvPool, libuvPoolSize, threadsForBatch } from "../../src/engines/llama/threadsForBatch.js";

it("leaves one core to Node for a lone token when llama.cpp's threads take every core, and uses them all otherwise", () => {
  const onTwoCores = threadsForBatch("auto", 2, 4);
  expect(onTwoCores({ batchSize: 1, threads: 2 })).toBe(1);
  expect(onTwoCores({ batchSize: 2, threads: 2 })).toBe(2);
  expect(onTwoCores({ batchSize: 512, threads: 2 })).toBe(2);
  expect(onTwoCores({ batchSize: 1, threads: 1 })).toBe(1);
  const onSixteen = threadsForBatch("auto", 16, 4);
  expect(onSixteen({ batchSize: 1, threads: 16 })).toBe(15);
  expect(onSixteen({ batchSize: 1, threads: 8 })).toBe(8);
  // A configured count, never above the context's.
  expect(threadsForBatch(3, 16)({ batchSize: 1, threads: 8 })).toBe(3);
  expect(threadsForBatch(12, 16)({ batchSize: 1, threads: 8 })).toBe(8);
  expect(threadsForBatch(3, 16)({ batchSize: 4, threads: 8 })).toBe(8);
});

it("uses every thread for a lone token when libuv's pool has one thread (every decode starts from the same thread)", () => {
  const onePool = threadsForBatch("auto", 2, 1);
  expect(onePool({ batchSize: 1, threads: 2 })).toBe(2);
  expect(onePool({ batchSize: 8, threads: 2 })).toBe(2);
  // A configured count still wins.
  expect(threadsForBatch(1, 2, 1)({ batchSize: 1, threads: 2 })).toBe(1);
  expect(libuvPoolSize({ UV_THREADPOOL_SIZE: "1" })).toBe(1);
  expect(libuvPoolSize({ UV_THREADPOOL_SIZE: "16" })).toBe(16);
  expect(libuvPoolSize({})).toBe(4);
  // As libuv reads it: leading digits, none or 0 is one thread, at most 1024.
  expect(libuvPoolSize({ UV_THREADPOOL_SIZE: "zero" })).toBe(1);
  expect(libuvPoolSize({ UV_THREADPOOL_SIZE: "" })).toBe(1);
  expect(libuvPoolSize({ UV_THREADPOOL_SIZE: "0" })).toBe(1);
  expect(libuvPoolSize({ UV_THREADPOOL_SIZE: "8threads" })).toBe(8);
  expect(libuvPoolSize({ UV_THREADPOOL_SIZE: "5000" })).toBe(1024);
});

it("says who chose the pool's size", () => {
  expect(describeLibuvPool({})).toEqual({ size: 4, chosenBy: "libuv's default" });
  expect(describeLibuvPool({ UV_THREADPOOL_SIZE: "2" })).toEqual({ size: 2, chosenBy: "UV_THREADPOOL_SIZE" });
  expect(describeLibuvPool({ UV_THREADPOOL_SIZE: "1", HEARTH_LIBUV_POOL_REASON: "no GPU device" })).toEqual({ size: 1, chosenBy: "hearth: no GPU device" });
});

it("warns the operator of llama.cpp on the CPU decoding from libuv's default pool, and only then", () => {
  const [notice] = cpuDecodePoolNotice(true, {});
  expect(notice?.message).toMatch(/llama\.cpp runs on the CPU while libuv's thread pool has 4 threads.*UV_THREADPOOL_SIZE=1/);
  expect(notice?.fields).toEqual({ libuvThreads: 4 });
  // A GPU, the operator's own size (whatever it is), or a pool of one (hearth serve's choice) say nothing.
  expect(cpuDecodePoolNotice(false, {})).toEqual([]);
  expect(cpuDecodePoolNotice(true, { UV_THREADPOOL_SIZE: "4" })).toEqual([]);
  expect(cpuDecodePoolNotice(true, { UV_THREADPOOL_SIZE: "1", HEARTH_LIBUV_POOL_REASON: "no GPU device" })).toEqual([]);
});
