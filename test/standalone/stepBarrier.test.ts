import { describe, expect, it } from "vitest";
import { StepBarrier, overlapsOutputWithDecode } from "../../src/engines/llama/StepBarrier.js";

const macrotask = () => new Promise<void>((resolve) => setImmediate(resolve));
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Records the order in which arrivals are let through. */
function tracker(barrier: StepBarrier) {
  const released: string[] = [];
  const arrive = (name: string) => barrier.arrive().then(() => released.push(name));
  return { released, arrive };
}

describe("StepBarrier: generating sequences take their steps together", () => {
  it("holds every arrival until all members have arrived, then lets them go together", async () => {
    const barrier = new StepBarrier({ deadlineFraction: 0.25, minDeadlineMs: 1000, maxDeadlineMs: 1000 });
    for (let i = 0; i < 3; i++) barrier.join();
    const { released, arrive } = tracker(barrier);
    const a = arrive("a");
    const b = arrive("b");
    await macrotask();
    await macrotask();
    expect(released).toEqual([]);
    const c = arrive("c");
    await Promise.all([a, b, c]);
    expect(released.sort()).toEqual(["a", "b", "c"]);
    expect(barrier.stats()).toMatchObject({ fullSteps: 1, deadlineSteps: 0 });
  });

  it("releases in a later macrotask than the last arrival, never within its microtasks", async () => {
    const barrier = new StepBarrier();
    barrier.join();
    barrier.join();
    const { released, arrive } = tracker(barrier);
    void arrive("a");
    void arrive("b");
    // Everything node-llama-cpp's decode loop does after the last sampling result is microtasks:
    // the queue it checks must still be empty when they have all run.
    for (let i = 0; i < 100; i++) await Promise.resolve();
    expect(released).toEqual([]);
    await macrotask();
    expect(released.sort()).toEqual(["a", "b"]);
  });

  it("lets the others go after the deadline when a member stalls, and the late one joins the next step", async () => {
    const barrier = new StepBarrier({ deadlineFraction: 0.25, minDeadlineMs: 20, maxDeadlineMs: 20 });
    for (let i = 0; i < 3; i++) barrier.join();
    const { released, arrive } = tracker(barrier);
    const startedAt = performance.now();
    await Promise.all([arrive("a"), arrive("b")]);
    const waited = performance.now() - startedAt;
    expect(released.sort()).toEqual(["a", "b"]);
    expect(waited).toBeGreaterThanOrEqual(15);
    expect(waited).toBeLessThan(1000);
    expect(barrier.stats().deadlineSteps).toBe(1);
    // The stalled member and the others meet again at the next step.
    released.length = 0;
    const next = [arrive("a"), arrive("b"), arrive("late")];
    await Promise.all(next);
    expect(released.sort()).toEqual(["a", "b", "late"]);
    expect(barrier.stats().fullSteps).toBe(1);
  });

  it("waits past the deadline for a member whose token is still being decoded or sampled", async () => {
    const barrier = new StepBarrier({ deadlineFraction: 0.25, minDeadlineMs: 5, maxDeadlineMs: 5 });
    barrier.join();
    barrier.join();
    const { released, arrive } = tracker(barrier);
    let deliver!: (token: number) => void;
    const token = barrier.inEngineWhile(new Promise<number>((resolve) => (deliver = resolve)));
    const a = arrive("a");
    await sleep(40);
    // Going without it would split the step in two: its result is on its way.
    expect(released).toEqual([]);
    deliver(7);
    expect(await token).toBe(7);
    // Now it has its token and is busy with it: the deadline applies.
    await a;
    expect(released).toEqual(["a"]);
    expect(barrier.stats().deadlineSteps).toBe(1);
  });

  it("does not let a member stuck in the engine (a slow sampler) hold the others past the engine wait", async () => {
    const barrier = new StepBarrier({ minDeadlineMs: 5, maxDeadlineMs: 5, engineMaxWaitMs: 60 });
    barrier.join();
    barrier.join();
    const { released, arrive } = tracker(barrier);
    let deliver!: (token: number) => void;
    const slow = barrier.inEngineWhile(new Promise<number>((resolve) => (deliver = resolve)));
    const startedAt = performance.now();
    await arrive("a");
    const waited = performance.now() - startedAt;
    expect(released).toEqual(["a"]);
    expect(waited).toBeGreaterThanOrEqual(50);
    expect(waited).toBeLessThan(1000);
    expect(barrier.stats().deadlineSteps).toBe(1);
    deliver(1);
    await slow;
  });

  it("a member leaving releases the ones waiting for it", async () => {
    const barrier = new StepBarrier({ deadlineFraction: 0.25, minDeadlineMs: 5000, maxDeadlineMs: 5000 });
    barrier.join();
    barrier.join();
    const { released, arrive } = tracker(barrier);
    const a = arrive("a");
    await sleep(5);
    expect(released).toEqual([]);
    barrier.leave();
    await a;
    expect(released).toEqual(["a"]);
    expect(barrier.stats()).toMatchObject({ fullSteps: 1, deadlineSteps: 0 });
  });

  it("a lone member goes on at once, without a trip through the event loop", async () => {
    const barrier = new StepBarrier({ deadlineFraction: 0.25, minDeadlineMs: 5000, maxDeadlineMs: 5000 });
    barrier.join();
    let macrotaskRan = false;
    setImmediate(() => (macrotaskRan = true));
    for (let i = 0; i < 10; i++) await barrier.arrive();
    expect(macrotaskRan).toBe(false);
    expect(barrier.stats().fullSteps).toBe(10);
  });

  it("derives the deadline from the measured step time, within its bounds", async () => {
    const barrier = new StepBarrier({ deadlineFraction: 0.5, minDeadlineMs: 2, maxDeadlineMs: 40 });
    expect(barrier.stats().deadlineMs).toBe(40);
    barrier.join();
    barrier.join();
    for (let i = 0; i < 12; i++) {
      await Promise.all([barrier.arrive(), barrier.arrive()]);
      await sleep(10);
    }
    const { deadlineMs } = barrier.stats();
    expect(deadlineMs).toBeGreaterThanOrEqual(4);
    expect(deadlineMs).toBeLessThan(40);
  });

  it("dispatches a lone generating sequence's decode within its own microtasks, ahead of its output; none or several wait for a macrotask", async () => {
    const barrier = new StepBarrier();
    const order: string[] = [];
    // What the stream does with a token: its write is flushed on process.nextTick (Node's http cork).
    const queueOutputAndDecode = () => {
      process.nextTick(() => order.push("output"));
      barrier.dispatchSchedule(() => order.push("decode"));
    };
    // Nothing generating yet (prompts only): prompts queued in the same turn wait for each other.
    await Promise.resolve().then(queueOutputAndDecode);
    await new Promise<void>((resolve) => process.nextTick(resolve));
    expect(order).toEqual(["output"]);
    await macrotask();
    expect(order).toEqual(["output", "decode"]);

    // In a microtask, as when a generation loop resumes: microtasks run before the nextTick queue.
    order.length = 0;
    barrier.join();
    await Promise.resolve().then(queueOutputAndDecode);
    await macrotask();
    expect(order).toEqual(["decode", "output"]);

    order.length = 0;
    barrier.join();
    await Promise.resolve().then(queueOutputAndDecode);
    await new Promise<void>((resolve) => process.nextTick(resolve));
    // Two generating: the tokens the barrier releases together must all be queued before the dispatch.
    expect(order).toEqual(["output"]);
    await macrotask();
    expect(order).toEqual(["output", "decode"]);
  });

  it("with overlapOutput, holds a step's output until the next step's decode has been dispatched and started", async () => {
    const barrier = new StepBarrier({ overlapOutput: true });
    barrier.join();
    barrier.join();
    const order: string[] = [];
    expect(barrier.holdsOutput()).toBe(true);
    // Each member: its output waits; it arrives; once released it queues its next token, which
    // asks node-llama-cpp's dispatch (the decode itself starts in the dispatch's microtasks).
    const member = async (name: string) => {
      barrier.afterNextStepStarts(() => order.push(`output ${name}`));
      await barrier.arrive();
      barrier.dispatchSchedule(() => {
        order.push(`dispatch ${name}`);
        void Promise.resolve().then(() => order.push(`decode started ${name}`));
      });
    };
    await Promise.all([member("a"), member("b")]);
    for (let i = 0; i < 4; i++) await macrotask();
    expect(order.slice(0, 4)).toEqual(["dispatch a", "decode started a", "dispatch b", "decode started b"]);
    expect(order.slice(4).sort()).toEqual(["output a", "output b"]);
  });

  it("without overlapOutput, or with one member, output is not held", () => {
    const off = new StepBarrier({ overlapOutput: false });
    off.join();
    off.join();
    expect(off.holdsOutput()).toBe(false);
    const alone = new StepBarrier({ overlapOutput: true });
    alone.join();
    expect(alone.holdsOutput()).toBe(false);
    alone.join();
    expect(alone.holdsOutput()).toBe(true);
    alone.setOverlapOutput(false);
    expect(alone.holdsOutput()).toBe(false);
    expect(alone.stats().overlapOutput).toBe(false);
  });

  it("output held while others generated is released when the last member goes on alone", async () => {
    const barrier = new StepBarrier({ overlapOutput: true });
    barrier.join();
    barrier.join();
    const order: string[] = [];
    barrier.afterNextStepStarts(() => order.push("held output"));
    barrier.leave();
    // The one left arrives alone: no release, but its held output must still go out.
    await barrier.arrive();
    expect(order).toEqual([]);
    await macrotask();
    await macrotask();
    expect(order).toEqual(["held output"]);
  });
});

describe("overlapsOutputWithDecode: output overlaps a decode that leaves the JavaScript thread a core", () => {
  it.each([
    [{ gpuLayers: 25, totalLayers: 25, threads: 16, cores: 16 }, true, "whole model on the GPU"],
    [{ gpuLayers: 10, totalLayers: 25, threads: 16, cores: 16 }, false, "part on the GPU, every core decoding the rest"],
    [{ gpuLayers: 0, totalLayers: 25, threads: 2, cores: 2 }, false, "CPU, every core decoding"],
    [{ gpuLayers: 0, totalLayers: 25, threads: 1, cores: 2 }, true, "CPU with a core to spare"],
    [{ gpuLayers: 0, totalLayers: 25, threads: 4, cores: 2 }, false, "more threads than cores"],
  ])("%o: %s (%s)", (decode, expected) => {
    expect(overlapsOutputWithDecode(decode)).toBe(expected);
  });
});
