import { GgufInsights, getLlama, LlamaLogLevel } from "node-llama-cpp";
import { afterEach, expect, it, vi } from "vitest";
import { LlamaChatEngine } from "../../src/engines/llama/LlamaChatEngine.js";
import { tinyChatEntry, tinyChatPath } from "../helpers/testServer.js";

/**
 * node-llama-cpp checks that a model and its context fit in memory by simulating them in llama.cpp
 * (GgufInsights' V2 estimates). Without those checks only the memory reservations skip the
 * estimates' results, so Hearth's patch (patches/node-llama-cpp+*.patch) skips the estimates too;
 * on the CPU Hearth loads without the checks. These count the simulations a load asks for.
 */

const simulations = () => {
  const model = vi.spyOn(GgufInsights.prototype, "estimateModelResourceRequirementsV2");
  const context = vi.spyOn(GgufInsights.prototype, "estimateContextResourceRequirementsV2");
  return () => model.mock.calls.length + context.mock.calls.length;
};
afterEach(() => {
  vi.restoreAllMocks();
});

it.each([
  [false, "simulates the model and its context"],
  [true, "simulates nothing (the install-time patch)"],
] as const)("node-llama-cpp loading a model and a context, ignoreMemorySafetyChecks %s, %s", async (ignoreMemorySafetyChecks, _outcome) => {
  const count = simulations();
  const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath: tinyChatPath(), ignoreMemorySafetyChecks });
  try {
    const context = await model.createContext({ contextSize: 256, sequences: 2, threads: 1, ignoreMemorySafetyChecks });
    if (ignoreMemorySafetyChecks) expect(count()).toBe(0);
    else expect(count()).toBeGreaterThanOrEqual(2);
    // Either way the context works.
    const sequence = context.getSequence();
    let tokens = 0;
    for await (const _token of sequence.evaluate(model.tokenize("Hello there"), { temperature: 0 })) {
      if (++tokens === 3) break;
    }
    expect(tokens).toBe(3);
  } finally {
    await model.dispose();
  }
});

it("Hearth's chat engine loads on the CPU without simulating the load", async () => {
  const count = simulations();
  const entry = tinyChatEntry();
  const engine = await LlamaChatEngine.load({ modelId: entry.id, file: entry.file!, settings: entry.llama, maxWaiting: entry.queue.maxWaiting, gpu: false });
  try {
    expect(count()).toBe(0);
    expect(engine.contextSize).toBe(entry.llama.contextSize);
  } finally {
    await engine.dispose();
  }
});
