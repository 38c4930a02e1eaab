import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ModelEntry } from "../../src/config/modelRegistry.js";
import { musicgenNewTokens, TransformersMusicEngine } from "../../src/engines/transformers/MusicEngine.js";
import { MusicWorkerEngine } from "../../src/engines/transformers/MusicWorkerEngine.js";
import { writeMusicgenModel } from "../../src/fixtures/onnx/musicgenModel.js";
import { inspectModel } from "../../src/models/inspectModel.js";

let root: string;
let engine: TransformersMusicEngine;
let worker: MusicWorkerEngine;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "hearth-music-engine-"));
  await writeMusicgenModel(join(root, "tiny-musicgen"));
  const entry = ModelEntry.parse({ id: "tiny-musicgen", type: "music", backend: "transformers", file: join(root, "tiny-musicgen"), onnx: { threads: 1 } });
  [engine, worker] = await Promise.all([TransformersMusicEngine.load(entry, false), MusicWorkerEngine.load(entry, false)]);
});
afterAll(async () => {
  await Promise.all([engine?.dispose(), worker?.dispose()]);
  rmSync(root, { recursive: true, force: true });
});

describe("the MusicGen engine on the tiny fixture", () => {
  it("hearth models add proposes a transformers music entry for a MusicGen directory", async () => {
    expect(await inspectModel(join(root, "tiny-musicgen"))).toMatchObject({
      backend: "transformers",
      type: "music",
      facts: { modelType: "musicgen", architecture: "MusicgenForConditionalGeneration" },
      entry: { type: "music", backend: "transformers" },
    });
  });

  it("counts the delay pattern's extra steps", () => {
    expect(musicgenNewTokens(50, 4)).toBe(53);
    expect(musicgenNewTokens(1, 1)).toBe(1);
  });

  it("returns exactly the asked duration at the model's rate, reporting progress per frame up to 1", async () => {
    expect(engine.sampleRate).toBe(32000);
    expect(engine.frameRate).toBe(50);
    const progress: number[] = [];
    const samples = await engine.generate({ prompt: "slow ambient synth", durationSeconds: 1.5, onProgress: (f) => progress.push(f) });
    expect(samples.length).toBe(48000);
    // 75 frames + 3 delay steps.
    expect(progress).toHaveLength(78);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(progress.at(-1)).toBe(1);
  });

  it("stops between steps when the signal aborts, long before the clip is done", async () => {
    const controller = new AbortController();
    let steps = 0;
    const run = engine.generate({
      prompt: "fast rock drums",
      durationSeconds: 30,
      signal: controller.signal,
      onProgress: () => {
        if (++steps === 10) controller.abort(new Error("cancelled"));
      },
    });
    await expect(run).rejects.toThrow("cancelled");
    // A 30 s clip is 1,503 steps: it stopped within a step or two of the abort.
    expect(steps).toBeLessThan(20);
  });
});

describe("the MusicGen engine on a worker thread", () => {
  it("returns the asked duration at the model's rate, with progress up to 1 at most once a percent", async () => {
    expect([worker.sampleRate, worker.frameRate]).toEqual([engine.sampleRate, engine.frameRate]);
    const progress: number[] = [];
    const samples = await worker.generate({ prompt: "slow ambient synth", durationSeconds: 3, onProgress: (f) => progress.push(f) });
    expect(samples).toBeInstanceOf(Float32Array);
    expect(samples.length).toBe(96000);
    expect(samples.some((x) => x !== 0)).toBe(true);
    // 150 frames + 3 delay steps, reported at 1% steps.
    expect(progress.length).toBeGreaterThan(50);
    expect(progress.length).toBeLessThanOrEqual(101);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(progress.at(-1)).toBe(1);
  });

  it("stops when the signal aborts, failing with its reason, and plays the next clip", async () => {
    const controller = new AbortController();
    const reason = new Error("cancelled");
    let last = 0;
    const run = worker.generate({
      prompt: "fast rock drums",
      durationSeconds: 30,
      signal: controller.signal,
      onProgress: (fraction) => {
        last = fraction;
        if (fraction >= 0.02) controller.abort(reason);
      },
    });
    await expect(run).rejects.toBe(reason);
    expect(last).toBeLessThan(0.2);
    expect((await worker.generate({ prompt: "calm", durationSeconds: 1 })).length).toBe(32000);
  });
});
