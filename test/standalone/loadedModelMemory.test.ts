import { GgufInsights } from "node-llama-cpp";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ModelsConfig } from "../../src/config/modelRegistry.js";
import { estimateGgufMemory } from "../../src/engines/llama/estimateGgufMemory.js";
import { LlamaChatEngine } from "../../src/engines/llama/LlamaChatEngine.js";
import { LlamaEmbeddingEngine } from "../../src/engines/llama/LlamaEmbeddingEngine.js";
import { ModelLifecycle } from "../../src/models/ModelLifecycle.js";
import { ModelRegistry } from "../../src/models/ModelRegistry.js";
import { tinyGgufEmbeddingEntry } from "../helpers/mediaModels.js";
import { tinyChatEntry } from "../helpers/testServer.js";

/**
 * A loaded GGUF model's memory is what llama.cpp reports for it, the figure the estimate gets
 * from a simulated load of the same model and settings; reading it from the loaded model spares
 * the simulation (a second load of the model, vocabulary included, whose memory the process keeps).
 */

/** Counts node-llama-cpp's simulated loads (its V2 estimates), as memorySafetyChecks.test.ts does. */
const simulations = () => {
  const model = vi.spyOn(GgufInsights.prototype, "estimateModelResourceRequirementsV2");
  const context = vi.spyOn(GgufInsights.prototype, "estimateContextResourceRequirementsV2");
  return () => model.mock.calls.length + context.mock.calls.length;
};

let lifecycle: ModelLifecycle | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await lifecycle?.dispose();
  lifecycle = undefined;
});

describe("a loaded engine's memory", () => {
  it.each([
    [false, "equals"],
    [true, "equals"],
    ["auto", "is at most (auto is estimated as its fallback without it)"],
  ] as const)("a chat model with flash attention %s: llama.cpp's report %s the estimate", async (flashAttention, _relation) => {
    const entry = tinyChatEntry({ llama: { contextSize: 1024, sequences: 2, threads: 1, gpuLayers: 0, flashAttention } });
    const engine = await LlamaChatEngine.load({ modelId: entry.id, file: entry.file!, settings: entry.llama, maxWaiting: entry.queue.maxWaiting, gpu: false });
    try {
      const inUse = engine.memoryInUse();
      // Weights (0.55 MiB) and two sequences of 1,024 cells of KV cache, more than either alone.
      expect(inUse.ramBytes).toBeGreaterThan(2_000_000);
      expect(inUse.vramBytes).toBe(0);
      const estimate = await estimateGgufMemory(entry, false);
      if (flashAttention === "auto") expect(inUse.ramBytes).toBeLessThanOrEqual(estimate.ramBytes);
      else expect(inUse).toEqual(estimate);
    } finally {
      await engine.dispose();
    }
  });

  it("an embedding model: its model and every parallel context, equal to the estimate", async () => {
    const entry = tinyGgufEmbeddingEntry({ embedding: { threads: 1, parallel: 2 } });
    const one = await LlamaEmbeddingEngine.load(tinyGgufEmbeddingEntry({ embedding: { threads: 1, parallel: 1 } }), false);
    const two = await LlamaEmbeddingEngine.load(entry, false);
    try {
      // The second context adds its own KV cache and buffers.
      expect(two.memoryInUse().ramBytes).toBeGreaterThan(one.memoryInUse().ramBytes);
      expect(two.memoryInUse()).toEqual(await estimateGgufMemory(entry, false));
    } finally {
      await Promise.all([one.dispose(), two.dispose()]);
    }
  });
});

describe("the model lifecycle", () => {
  it("records a loaded GGUF model's memory at its load, and the admin listing's estimate then simulates nothing", async () => {
    const entry = tinyChatEntry();
    const models = new ModelLifecycle(new ModelRegistry(ModelsConfig.parse({ models: [entry] })), { gpu: false });
    lifecycle = models;
    expect(models.statusOf(entry.id).memory).toBeNull();
    const count = simulations();
    const loaded = await models.load(entry.id);
    expect(loaded.state).toBe("loaded");
    expect(loaded.memory).toEqual(models.loadedEngine(entry.id)!.memoryInUse!());
    await models.estimate();
    expect(count()).toBe(0);
    expect(models.statusOf(entry.id).memory).toEqual(loaded.memory);
    expect(models.budget().ram.usedBytes).toBe(loaded.memory!.ramBytes);
  });

  it("still estimates the models that are not loaded", async () => {
    const entry = tinyChatEntry();
    const models = new ModelLifecycle(new ModelRegistry(ModelsConfig.parse({ models: [entry] })), { gpu: false });
    lifecycle = models;
    const count = simulations();
    await models.estimate();
    expect(count()).toBeGreaterThanOrEqual(2);
    expect(models.statusOf(entry.id).memory).toEqual(await estimateGgufMemory(entry, false));
  });
});
