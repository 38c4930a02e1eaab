import { afterEach, describe, expect, it } from "vitest";
import { TaskAbortedError, WorkerPool } from "../../src/engines/worker/WorkerPool.js";
import { ApiError, InferenceError, ModelAtCapacityError } from "../../src/errors.js";

const ENTRY = new URL("../helpers/testWorker.ts", import.meta.url);
let pools: WorkerPool[] = [];
afterEach(async () => {
  await Promise.all(pools.map((p) => p.dispose()));
  pools = [];
});
const start = async (options: { size?: number; maxWaiting?: number; data?: unknown; stopAbortedAfterMs?: number } = {}) => {
  const pool = await WorkerPool.start({
    name: "test-model",
    entry: ENTRY,
    data: options.data ?? { n: 1 },
    size: options.size ?? 1,
    maxWaiting: options.maxWaiting ?? 8,
    stopAbortedAfterMs: options.stopAbortedAfterMs,
  });
  pools.push(pool);
  return pool;
};

describe("WorkerPool", () => {
  it("loads the module in worker threads and runs tasks there, reporting events", async () => {
    const pool = await start({ size: 2 });
    expect(pool.info).toEqual({ loadedWith: { n: 1 } });
    expect(pool.stats()).toEqual({ workers: 2, busy: 0, waiting: 0 });
    expect((await pool.run({ type: "echo", value: [1, 2] })).result).toEqual({ greeting: "hello", value: [1, 2] });
    const events: unknown[] = [];
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    const { result } = await pool.run({ type: "spin", steps: 40 }, { onEvent: (e) => events.push(e) });
    clearInterval(timer);
    expect(result).toBe("spun");
    expect(events).toHaveLength(40);
    // 200 ms of busy work in the worker; this thread's timers kept firing.
    expect(ticks).toBeGreaterThan(10);
  });

  it("a load failure rejects start() with the worker's message", async () => {
    await expect(WorkerPool.start({ name: "bad", entry: ENTRY, data: { fail: true }, size: 1, maxWaiting: 1 })).rejects.toThrow("cannot load this model");
  });

  it("queues beyond its workers and answers 503 past maxWaiting", async () => {
    const pool = await start({ size: 1, maxWaiting: 1 });
    const running = pool.run({ type: "spin", steps: 20 });
    const waiting = pool.run({ type: "echo", value: 1 });
    expect(pool.stats()).toEqual({ workers: 1, busy: 1, waiting: 1 });
    await expect(pool.run({ type: "echo", value: 2 })).rejects.toBeInstanceOf(ModelAtCapacityError);
    await running;
    const { queueMs } = await waiting;
    expect(queueMs).toBeGreaterThan(20);
  });

  it("aborts a running task at its next checkpoint, and a queued one at once", async () => {
    const pool = await start({ size: 1 });
    const controller = new AbortController();
    const steps: number[] = [];
    const running = pool.run({ type: "spin", steps: 1000 }, { signal: controller.signal, onEvent: (e) => steps.push((e as { step: number }).step) });
    const queuedController = new AbortController();
    const queued = pool.run({ type: "echo", value: 1 }, { signal: queuedController.signal });
    queuedController.abort();
    await expect(queued).rejects.toBeInstanceOf(TaskAbortedError);
    await new Promise((r) => setTimeout(r, 50));
    controller.abort();
    await expect(running).rejects.toBeInstanceOf(TaskAbortedError);
    expect(steps.length).toBeLessThan(1000);
    expect((await pool.run({ type: "echo", value: "after" })).result).toMatchObject({ value: "after" });
  });

  it("a task error is a 500 with the worker's message; a dead worker fails its task and is replaced", async () => {
    const pool = await start({ size: 1 });
    const failed = await pool.run({ type: "throw" }).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(InferenceError);
    expect((failed as Error).message).toBe("Inference processing failed: the model said no");
    const crash = pool.run({ type: "crash" });
    const next = pool.run({ type: "echo", value: "queued behind the crash" });
    await expect(crash).rejects.toThrow(/worker exited with code 3/);
    expect((await next).result).toMatchObject({ value: "queued behind the crash" });
    expect(pool.stats().workers).toBe(1);
  });

  it("a client error found in the worker stays a 4xx with its details", async () => {
    const pool = await start({ size: 1 });
    const refused = await pool.run({ type: "refuse" }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).not.toBeInstanceOf(InferenceError);
    expect(refused).toMatchObject({ status: 400, name: "InvalidRequestError", message: "language: Language xx is not supported" });
    expect((refused as ApiError).extra.details).toEqual({ _errors: [], language: { _errors: ["Language xx is not supported"] } });
  });

  it("aborts the signal a task watches; the task's own error then still reads as an abort", async () => {
    const pool = await start({ size: 1 });
    const controller = new AbortController();
    const steps: unknown[] = [];
    const running = pool.run({ type: "watch-signal" }, { signal: controller.signal, onEvent: (e) => steps.push(e) });
    while (steps.length < 3) await new Promise((resolve) => setTimeout(resolve, 5));
    controller.abort();
    await expect(running).rejects.toBeInstanceOf(TaskAbortedError);
    expect((await pool.run({ type: "echo", value: "after" })).result).toMatchObject({ value: "after" });
  });

  it("call() runs beside a running task and its queue, uncounted; its failures read as run()'s; a dead worker fails it", async () => {
    const pool = await start({ size: 1, maxWaiting: 1 });
    const steps: number[] = [];
    const running = pool.run({ type: "spin", steps: 60 }, { onEvent: (e) => steps.push((e as { step: number }).step) });
    expect(pool.hasRoom(1)).toBe(true);
    expect(pool.hasRoom(2)).toBe(false);
    const waiting = pool.run({ type: "echo", value: "queued" });
    expect(pool.hasRoom()).toBe(false);
    // Answered between the running task's steps, long before that task (300 ms) and the queued one end.
    const answer = await pool.call({ type: "echo", value: "now" });
    expect(answer).toEqual({ greeting: "hello", value: "now" });
    expect(steps.length).toBeLessThan(60);
    expect(pool.stats()).toEqual({ workers: 1, busy: 1, waiting: 1 });
    await expect(pool.call({ type: "refuse" })).rejects.toMatchObject({ status: 400 });
    await expect(pool.call({ type: "throw" })).rejects.toBeInstanceOf(InferenceError);
    expect((await running).result).toBe("spun");
    expect((await waiting).result).toEqual({ greeting: "hello", value: "queued" });
    expect(pool.hasRoom()).toBe(true);
    const lost = pool.call({ type: "crash" });
    await expect(lost).rejects.toThrow(/exited with code 3/);
  });

  it("a call made while the only worker is being replaced goes to the new one", async () => {
    const pool = await start({ size: 1 });
    const crashed = pool.run({ type: "crash" }).catch((e: unknown) => e);
    expect(await crashed).toBeInstanceOf(InferenceError);
    // The replacement is still loading: the call waits for it instead of failing.
    expect(pool.stats().workers).toBe(0);
    expect(await pool.call({ type: "echo", value: "after the crash" })).toEqual({ greeting: "hello", value: "after the crash" });
    expect(pool.stats().workers).toBe(1);
  });

  it("dispose() fails what is running and waiting", async () => {
    const pool = await start({ size: 1 });
    const running = pool.run({ type: "spin", steps: 1000 }).catch((e: unknown) => e);
    const waiting = pool.run({ type: "echo", value: 1 }).catch((e: unknown) => e);
    await pool.dispose();
    expect(await running).toBeInstanceOf(InferenceError);
    expect(await waiting).toBeInstanceOf(InferenceError);
  });
});

describe("WorkerPool.runWhenFree", () => {
  it("makes a task's payload only once a worker is free for it, and moves what it names to transfer", async () => {
    const pool = await start({ size: 1 });
    let firstSteps = 0;
    const running = pool.run({ type: "spin", steps: 20 }, { onEvent: () => firstSteps++ });
    const samples = new Float32Array([0.25, -0.5]);
    let stepsWhenPrepared: number | undefined;
    const second = pool.runWhenFree(async () => {
      stepsWhenPrepared = firstSteps;
      return { payload: { type: "echo", value: samples }, transfer: [samples.buffer] };
    });
    expect(pool.stats()).toEqual({ workers: 1, busy: 1, waiting: 1 });
    const { result } = await second;
    expect((await running).result).toBe("spun");
    // Made after the first task had run all its steps.
    expect(stepsWhenPrepared).toBe(20);
    expect((result as { value: Float32Array }).value).toEqual(new Float32Array([0.25, -0.5]));
    // Moved, not copied: this side's buffer is detached.
    expect(samples.buffer.byteLength).toBe(0);
  });

  it("fails the task with what prepare throws, and the worker serves the next", async () => {
    const pool = await start({ size: 1 });
    const refused = pool.runWhenFree(async () => {
      throw new InferenceError("not decodable");
    });
    const next = pool.run({ type: "echo", value: 2 });
    await expect(refused).rejects.toThrow("not decodable");
    expect((await next).result).toEqual({ greeting: "hello", value: 2 });
    expect(pool.stats()).toEqual({ workers: 1, busy: 0, waiting: 0 });
  });

  it("a task aborted while its payload is made frees its worker at once; the payload never reaches it", async () => {
    const pool = await start({ size: 1 });
    const controller = new AbortController();
    let finishPreparing: () => void = () => undefined;
    const aborted = pool.runWhenFree(
      async () => {
        await new Promise<void>((resolve) => (finishPreparing = resolve));
        return { payload: { type: "crash" } };
      },
      { signal: controller.signal },
    );
    const next = pool.run({ type: "echo", value: 3 });
    controller.abort();
    await expect(aborted).rejects.toBeInstanceOf(TaskAbortedError);
    expect((await next).result).toEqual({ greeting: "hello", value: 3 });
    // Its payload (a task that would kill the worker) comes too late to be sent.
    finishPreparing();
    await new Promise((r) => setTimeout(r, 20));
    expect((await pool.run({ type: "echo", value: 4 })).result).toEqual({ greeting: "hello", value: 4 });
    expect(pool.stats()).toEqual({ workers: 1, busy: 0, waiting: 0 });
  });

  it("stops and replaces a worker whose aborted task never reaches a checkpoint, with stopAbortedAfterMs; the queue goes on", async () => {
    const pool = await start({ stopAbortedAfterMs: 100 });
    const controller = new AbortController();
    const blocked = pool.run({ type: "block", ms: 60_000 }, { signal: controller.signal }).catch((e: unknown) => e);
    const queued = pool.run({ type: "echo", value: 7 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const abortedAt = performance.now();
    controller.abort();
    expect(await blocked).toBeInstanceOf(TaskAbortedError);
    // Stopped after the grace, not after the minute the task would have taken.
    expect(performance.now() - abortedAt).toBeLessThan(30_000);
    expect((await queued).result).toEqual({ greeting: "hello", value: 7 });
    expect(pool.stats()).toEqual({ workers: 1, busy: 0, waiting: 0 });
  });
});
