import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { ModelEntry, ModelsConfig } from "../../src/config/modelRegistry.js";
import { estimateMemory } from "../../src/models/estimateMemory.js";
import { ModelLifecycle, type ModelLifecycleOptions } from "../../src/models/ModelLifecycle.js";
import type { ModelChange, ModelLease } from "../../src/models/ModelStatus.js";
import { ModelRegistry } from "../../src/models/ModelRegistry.js";

/**
 * The model lifecycle's eviction rules, on real engines: several registry entries over the
 * tiny Kokoro demo model (each its own loadable model, estimated at the size of its files),
 * a manual clock, and the memory budget set to hold exactly two of them.
 */

const kokoro = (id: string, overrides: Partial<Record<string, unknown>> = {}) =>
  ModelEntry.parse({ id, type: "tts", backend: "kokoro", file: join(inject("fixturesDir"), "tiny-kokoro"), onnx: { threads: 1 }, ...overrides });

let modelBytes = 0;
beforeAll(async () => {
  modelBytes = (await estimateMemory(kokoro("probe"), false)).ramBytes;
  expect(modelBytes).toBeGreaterThan(100_000);
});

let clock = 1_000_000;
let lifecycle: ModelLifecycle | undefined;
let changes: ModelChange[] = [];

function start(entries: ModelEntry[], options: Partial<ModelLifecycleOptions> = {}): ModelLifecycle {
  clock = 1_000_000;
  changes = [];
  lifecycle = new ModelLifecycle(new ModelRegistry(ModelsConfig.parse({ models: entries })), { gpu: false, now: () => clock, ...options });
  lifecycle.onChange((change) => changes.push(change));
  return lifecycle;
}
afterEach(async () => {
  await lifecycle?.dispose();
  lifecycle = undefined;
});

/** One request's use of a model, at the current clock. */
async function use(models: ModelLifecycle, id: string): Promise<void> {
  (await models.acquire(id, "speech")).release();
}
const stateOf = (models: ModelLifecycle, id: string) => models.statusOf(id).state;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const evicted = () => changes.filter((c) => c.reason === "evicted").flatMap((c) => c.ids);

describe("memory budget", () => {
  it("loads models until the budget is full, then unloads the least recently used idle one to make room", async () => {
    const models = start([kokoro("a"), kokoro("b"), kokoro("c")], { ramBudgetBytes: Math.floor(modelBytes * 2.5), keepAliveSeconds: -1 });
    await use(models, "a");
    clock += 1000;
    await use(models, "b");
    expect(models.budget().ram).toEqual({ limitBytes: Math.floor(modelBytes * 2.5), usedBytes: 2 * modelBytes });
    clock += 1000;
    await use(models, "a"); // b is now the least recently used
    clock += 1000;
    await use(models, "c");
    expect(evicted()).toEqual(["b"]);
    expect([stateOf(models, "a"), stateOf(models, "b"), stateOf(models, "c")]).toEqual(["loaded", "unloaded", "loaded"]);
    expect(models.budget().ram.usedBytes).toBe(2 * modelBytes);
  });

  it("refuses a model larger than the whole budget (503 naming both sizes) without unloading anything", async () => {
    // The tiny VITS model is a few KiB: it fits; Kokoro alone is twice the budget.
    const vits = ModelEntry.parse({ id: "small", type: "tts", backend: "vits", file: join(inject("fixturesDir"), "tiny-vits"), onnx: { threads: 1 } });
    const models = start([vits, kokoro("a")], { ramBudgetBytes: Math.floor(modelBytes / 2), keepAliveSeconds: -1 });
    await use(models, "small");
    const refused = await use(models, "a").catch((error: unknown) => error);
    expect(refused).toMatchObject({ status: 503 });
    expect((refused as Error).message).toMatch(/it needs about .* of RAM and the RAM budget is/);
    expect(stateOf(models, "a")).toBe("failed");
    expect(stateOf(models, "small")).toBe("loaded");
    expect(evicted()).toEqual([]);
  });

  it("never unloads a model a request holds: a load with no idle model to evict waits, then fails with a 503 naming the busy models", async () => {
    const models = start([kokoro("a"), kokoro("b"), kokoro("c")], { ramBudgetBytes: Math.floor(modelBytes * 2.5), keepAliveSeconds: -1, loadWaitMs: 0 });
    const held: ModelLease[] = [await models.acquire("a", "speech"), await models.acquire("b", "speech")];
    const refused = await models.acquire("c", "speech").catch((error: unknown) => error);
    expect(refused).toMatchObject({ status: 503 });
    expect((refused as Error).message).toMatch(/memory budget is full and the models holding it \(a, b\) are busy/);
    expect(evicted()).toEqual([]);
    expect([stateOf(models, "a"), stateOf(models, "b"), stateOf(models, "c")]).toEqual(["loaded", "loaded", "unloaded"]);
    for (const lease of held) lease.release();
  });

  it("a load waiting for room goes on as soon as a request releases a model, and evicts that one", async () => {
    const models = start([kokoro("a"), kokoro("b"), kokoro("c")], { ramBudgetBytes: Math.floor(modelBytes * 2.5), keepAliveSeconds: -1, loadWaitMs: 60_000 });
    const leaseA = await models.acquire("a", "speech");
    clock += 1000;
    const leaseB = await models.acquire("b", "speech");
    const waiting = models.acquire("c", "speech");
    await sleep(200);
    expect(stateOf(models, "c")).toBe("loading");
    clock += 1000;
    leaseB.release();
    (await waiting).release();
    expect(evicted()).toEqual(["b"]);
    expect(stateOf(models, "a")).toBe("loaded");
    leaseA.release();
  });
});

describe("memory estimate", () => {
  it("without a budget, nothing is estimated until asked (the admin listing)", async () => {
    const models = start([kokoro("a"), kokoro("b")], { keepAliveSeconds: -1 });
    await use(models, "a");
    expect((await models.load("b")).memory).toBeNull();
    await sleep(50);
    expect(stateOf(models, "a")).toBe("loaded");
    expect(models.statusOf("a").memory).toBeNull();
    expect(models.budget().ram.usedBytes).toBe(0);
    await models.estimate();
    expect(models.statusOf("a").memory).toEqual({ ramBytes: modelBytes, vramBytes: 0 });
    expect(models.budget().ram.usedBytes).toBe(2 * modelBytes);
  });

  it("with a budget, the estimate is made before the load (evictions depend on it)", async () => {
    const models = start([kokoro("a")], { ramBudgetBytes: modelBytes * 4 });
    const lease = await models.acquire("a", "speech");
    expect(models.statusOf("a").memory).toEqual({ ramBytes: modelBytes, vramBytes: 0 });
    expect(models.budget().ram.usedBytes).toBe(modelBytes);
    lease.release();
  });
});

describe("keep-alive", () => {
  it("unloads an idle model once its keep-alive has passed on the injected clock, not before", async () => {
    const models = start([kokoro("a", { keepAlive: 1 })]);
    await use(models, "a");
    // The timer wakes after a second of real time, but the clock says no time has passed.
    await sleep(1300);
    expect(stateOf(models, "a")).toBe("loaded");
    clock += 1000;
    await expect.poll(() => stateOf(models, "a"), { timeout: 3000 }).toBe("unloaded");
    expect(changes.at(-1)).toMatchObject({ ids: ["a"], reason: "idle" });
  });

  it("keeps a model a request holds past its keep-alive, and counts the keep-alive from the release", async () => {
    const models = start([kokoro("a", { keepAlive: 1 })]);
    const lease = await models.acquire("a", "speech");
    clock += 10_000;
    await sleep(1300);
    expect(stateOf(models, "a")).toBe("loaded");
    lease.release();
    await sleep(1300);
    expect(stateOf(models, "a")).toBe("loaded");
    clock += 1000;
    await expect.poll(() => stateOf(models, "a"), { timeout: 3000 }).toBe("unloaded");
  });

  it("0 unloads as soon as the model is idle; -1 never unloads for idleness", async () => {
    const models = start([kokoro("now", { keepAlive: 0 }), kokoro("never", { keepAlive: -1 })], { keepAliveSeconds: 300 });
    await use(models, "now");
    await use(models, "never");
    await expect.poll(() => stateOf(models, "now"), { timeout: 3000 }).toBe("unloaded");
    clock += 365 * 24 * 3600_000;
    await sleep(200);
    expect(stateOf(models, "never")).toBe("loaded");
    expect(models.statusOf("never").keepAliveSeconds).toBe(-1);
  });
});
