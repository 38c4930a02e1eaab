import { readFileSync } from "node:fs";
import { join } from "node:path";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { LlamaSettings } from "../../src/config/backendSettings.js";
import { LlamaChatEngine } from "../../src/engines/llama/LlamaChatEngine.js";
import { SamplerBufferCollector, samplerBuffers } from "../../src/engines/llama/SamplerBufferCollector.js";
import { fullGarbageCollection } from "../../src/garbageCollection.js";
import { QWEN25_HEADER_SHAPE, writeChatModel } from "../../src/fixtures/gguf/chatModel.js";
import { testTempDir } from "../helpers/tempDir.js";

// node-llama-cpp's native sampler keeps a candidate buffer for the whole vocabulary (12 bytes a
// token) until V8 collects the sampler's object, and V8 does not know the buffer is there. Hearth
// counts the buffers it lets go and runs a full collection past a threshold.

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe("SamplerBufferCollector", () => {
  it("runs one full collection on the next turn once the buffers pass the threshold, then counts afresh", async () => {
    let runs = 0;
    const collector = new SamplerBufferCollector(100 * 12, () => () => runs++);
    collector.samplerStarted(50);
    await nextTurn();
    expect(runs).toBe(0);
    collector.samplerStarted(50);
    collector.samplerStarted(50);
    expect(runs).toBe(0); // never in the middle of the caller's work
    await nextTurn();
    expect(runs).toBe(1);
    expect(collector.collections).toBe(1);
    collector.samplerStarted(50);
    await nextTurn();
    expect(runs).toBe(1);
    collector.samplerStarted(60);
    await nextTurn();
    expect(runs).toBe(2);
  });

  it("does nothing where no full collection can be had, and asks again next time", async () => {
    let asked = 0;
    const collector = new SamplerBufferCollector(12, () => {
      asked++;
      return null;
    });
    collector.samplerStarted(1);
    await nextTurn();
    collector.samplerStarted(1);
    await nextTurn();
    expect(asked).toBe(2);
    expect(collector.collections).toBe(0);
  });

  it("gets V8's full collection: an unreachable object is gone after it, and later contexts have no gc", async () => {
    const startedWithGc = typeof (globalThis as { gc?: unknown }).gc === "function";
    const gc = fullGarbageCollection();
    expect(gc).toBeTypeOf("function");
    const ref = (() => new WeakRef({ payload: new Array(10_000).fill(1) }))();
    await nextTurn(); // a WeakRef's target lives at least to the end of the job that made it
    gc!();
    expect(ref.deref()).toBeUndefined();
    if (!startedWithGc) expect(runInNewContext("typeof gc")).toBe("undefined");
  });
});

describe("Hearth's chat engine on a real-sized vocabulary", () => {
  const anonymousBytes = () => Number(/RssAnon:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"))![1]) * 1024;

  it.runIf(process.platform === "linux")(
    "lets no sampler buffers pile up: full collections run, and memory stays near where it was",
    async () => {
      const file = join(testTempDir("hearth-sampler-buffers-"), "qwen-vocab.gguf");
      await writeChatModel(file, QWEN25_HEADER_SHAPE);
      const settings = LlamaSettings.parse({ contextSize: 512, threads: 1, sequences: 4 });
      const engine = await LlamaChatEngine.load({ modelId: "vocab", file, settings, maxWaiting: 64, gpu: false });
      const generate = async (count: number) => {
        let next = 0;
        await Promise.all(
          [0, 1, 2, 3].map(async () => {
            while (next < count) {
              const n = next++;
              const planned = engine.plan({ messages: [{ role: "user", content: `Question ${n}: what is the sea?` }], maxTokens: 4, sampling: { temperature: 0 } });
              await planned.generate({});
            }
          }),
        );
      };
      try {
        await generate(16);
        await nextTurn();
        const before = { collections: samplerBuffers.collections, anon: anonymousBytes() };
        // 96 samplers of 151,936 candidates are 175 MB of buffers: without the collector they stay.
        await generate(96);
        await nextTurn();
        expect(samplerBuffers.collections - before.collections).toBeGreaterThanOrEqual(2);
        expect(anonymousBytes() - before.anon).toBeLessThan(100 * 2 ** 20);
      } finally {
        await engine.dispose();
      }
    },
    120_000,
  );
});
