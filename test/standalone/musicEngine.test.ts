import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ModelEntry } from "../../src/config/modelRegistry.js";
import { musicgenNewTokens, TransformersMusicEngine } from "../../src/engines/transformers/MusicEngine.js";
import { writeMusicgenModel } from "../../src/fixtures/onnx/musicgenModel.js";
import { inspectModel } from "../../src/models/inspectModel.js";

let root: string;
let engine: TransformersMusicEngine;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "hearth-music-engine-"));
  await writeMusicgenModel(join(root, "tiny-musicgen"));
  const entry = ModelEntry.parse({ id: "tiny-musicgen", type: "music", backend: "transformers", file: join(root, "tiny-musicgen"), onnx: { threads: 1 } });
  engine = await TransformersMusicEngine.load(entry, false);
});
afterAll(async () => {
  await engine?.dispose();
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
