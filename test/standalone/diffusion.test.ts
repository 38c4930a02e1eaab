import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GaussianNoise } from "../../src/engines/diffusion/GaussianNoise.js";
import { createScheduler, guidanceScaleEmbedding, samplerFor, spacedTimesteps, type SchedulerConfig } from "../../src/engines/diffusion/schedulers.js";
import { clipPreprocess, StableDiffusionPipeline } from "../../src/engines/diffusion/StableDiffusionPipeline.js";
import { floatToHalf, fromFloat16, halfToFloat, slerp, toFloat16 } from "../../src/engines/diffusion/tensors.js";
import { writeSafetyCheckerModel, writeStableDiffusionModel } from "../../src/fixtures/onnx/index.js";

/** SD 1.x/2.x and SD-Turbo's betas: scaled_linear 0.00085 -> 0.012 over 1000 steps. */
const SD: SchedulerConfig = { num_train_timesteps: 1000, beta_start: 0.00085, beta_end: 0.012, beta_schedule: "scaled_linear", prediction_type: "epsilon" };

describe("schedulers (values computed with numpy from diffusers' formulas)", () => {
  it("spaces timesteps as diffusers does: trailing (SD-Turbo), leading with steps_offset (SD 1.5), linspace", () => {
    expect(spacedTimesteps({ ...SD, timestep_spacing: "trailing" }, 1)).toEqual([999]);
    expect(spacedTimesteps({ ...SD, timestep_spacing: "trailing" }, 3)).toEqual([999, 666, 332]);
    expect(spacedTimesteps({ ...SD, timestep_spacing: "trailing" }, 4)).toEqual([999, 749, 499, 249]);
    const leading = spacedTimesteps({ ...SD, timestep_spacing: "leading", steps_offset: 1 }, 50);
    expect(leading.slice(0, 3)).toEqual([981, 961, 941]);
    expect(leading.slice(-2)).toEqual([21, 1]);
    const linspace = spacedTimesteps({ ...SD, timestep_spacing: "linspace" }, 25);
    expect(linspace[0]).toBe(999);
    expect(linspace[1]).toBeCloseTo(957.375, 3);
  });

  it("Euler: sigmas interpolated from the cumulative alphas, init noise sigma by spacing", () => {
    const trailing = createScheduler("euler", { ...SD, timestep_spacing: "trailing" }, 4) as unknown as { sigmas: number[]; initNoiseSigma: number };
    expect(trailing.sigmas[0]).toBeCloseTo(14.61464123, 6);
    expect(trailing.sigmas[1]).toBeCloseTo(4.08172936, 6);
    expect(trailing.sigmas[3]).toBeCloseTo(0.6932049, 6);
    expect(trailing.sigmas[4]).toBe(0);
    expect(trailing.initNoiseSigma).toBeCloseTo(14.61464123, 6);
    const leading = createScheduler("euler", { ...SD, timestep_spacing: "leading", steps_offset: 1 }, 50);
    expect(leading.initNoiseSigma).toBeCloseTo(Math.sqrt(leading.initNoiseSigma ** 2), 6);
    const linspace = createScheduler("euler", { ...SD, timestep_spacing: "linspace" }, 25) as unknown as { sigmas: number[] };
    expect(linspace.sigmas[1]).toBeCloseTo(11.43593769, 5);
  });

  it("Euler with Karras sigmas maps sigmas back to fractional timesteps", () => {
    const karras = createScheduler("euler", { ...SD, timestep_spacing: "leading", steps_offset: 1, use_karras_sigmas: true }, 10) as unknown as {
      sigmas: number[];
      timesteps: number[];
    };
    expect(karras.sigmas[0]).toBeCloseTo(8.39068477, 5);
    expect(karras.timesteps[0]).toBeCloseTo(901, 3);
    expect(karras.timesteps[1]).toBeCloseTo(815.01749426, 3);
  });

  it("LCM: timesteps skip along the 50 original steps", () => {
    const lcm = { ...SD, _class_name: "LCMScheduler", original_inference_steps: 50 };
    expect(samplerFor(lcm)).toBe("lcm");
    expect(createScheduler("lcm", lcm, 1).timesteps).toEqual([999]);
    expect(createScheduler("lcm", lcm, 4).timesteps).toEqual([999, 759, 499, 259]);
    expect(createScheduler("lcm", lcm, 8).timesteps).toEqual([999, 879, 759, 639, 499, 379, 259, 139]);
    expect(guidanceScaleEmbedding(8.5, 256)).toHaveLength(256);
  });

  it("one Euler step of a perfect noise prediction lands on the clean sample", () => {
    const scheduler = createScheduler("euler", { ...SD, timestep_spacing: "trailing" }, 1);
    const clean = Float32Array.from([0.5, -0.25, 1]);
    const noise = Float32Array.from([1, -1, 0.5]);
    const sigma = scheduler.initNoiseSigma;
    const noisy = clean.map((x, i) => x + sigma * noise[i]!);
    const out = scheduler.step(0, noise, noisy, new GaussianNoise(1));
    for (let i = 0; i < 3; i++) expect(out[i]).toBeCloseTo(clean[i]!, 4);
  });
});

describe("numerics", () => {
  it("seeded noise is reproducible and standard normal", () => {
    const a = new GaussianNoise(42).sample(20000);
    expect(new GaussianNoise(42).sample(20000)).toEqual(a);
    expect(new GaussianNoise(43).sample(8)).not.toEqual(a.slice(0, 8));
    const mean = a.reduce((s, x) => s + x, 0) / a.length;
    const variance = a.reduce((s, x) => s + (x - mean) ** 2, 0) / a.length;
    expect(Math.abs(mean)).toBeLessThan(0.03);
    expect(variance).toBeGreaterThan(0.95);
    expect(variance).toBeLessThan(1.05);
  });

  it("float16 round-trips and slerp keeps the norm of unit noise", () => {
    for (const v of [0, 1, -2.5, 65504, 1e-5, 0.1]) expect(halfToFloat(floatToHalf(v))).toBeCloseTo(v, v > 1000 ? -2 : 3);
    expect(fromFloat16(toFloat16([1, 2, 3]))).toEqual(Float32Array.from([1, 2, 3]));
    const a = new GaussianNoise(1).sample(4096);
    const b = new GaussianNoise(2).sample(4096);
    const norm = (x: Float32Array) => Math.hypot(...x);
    const mid = slerp(a, b, 0.5);
    expect(norm(mid) / norm(a)).toBeGreaterThan(0.95);
    expect(slerp(a, b, 0)).toEqual(a);
  });

  it("prepares the safety checker's CLIP input at 224x224", () => {
    const rgb = new Uint8Array(64 * 32 * 3).fill(128);
    const input = clipPreprocess(rgb, 64, 32);
    expect(input).toHaveLength(3 * 224 * 224);
    expect(input[0]).toBeCloseTo((128 / 255 - 0.48145466) / 0.26862954, 4);
  });
});

describe("StableDiffusionPipeline on the tiny SD export", () => {
  let root: string;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), "hearth-sd-"));
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const base = { prompt: "a photo of a cat", negativePrompt: "", width: 64, height: 48, steps: 3, cfgScale: 1, seed: 7, safetyCheck: true };

  it.each(["float32", "int64"] as const)("reads the %s timestep input from the session and produces RGB of the requested size", async (timestepType) => {
    const dir = join(root, `sd-${timestepType}`);
    await writeStableDiffusionModel(dir, { timestepType });
    const pipeline = await StableDiffusionPipeline.load(dir, { threads: 1, executionProviders: ["cpu"], sampler: "auto" });
    expect(pipeline.info).toMatchObject({ timestepType, sampler: "euler", latentChannels: 4, vaeScale: 8, batchedGuidance: true, safetyChecker: false });
    const image = await pipeline.textToImage(base);
    expect(image.rgb).toHaveLength(64 * 48 * 3);
    expect(image.nsfw).toBeNull();
    // Random weights: mostly saturated pixels, but a real picture, not a constant.
    expect(new Set(image.rgb).size).toBeGreaterThan(2);
    await pipeline.dispose();
  });

  it("same seed and settings give the same pixels; another seed, prompt or guidance gives others", async () => {
    const dir = join(root, "sd-determinism");
    await writeStableDiffusionModel(dir);
    const pipeline = await StableDiffusionPipeline.load(dir, { threads: 1, executionProviders: ["cpu"], sampler: "euler_ancestral" });
    const first = await pipeline.textToImage(base);
    expect((await pipeline.textToImage(base)).rgb).toEqual(first.rgb);
    expect((await pipeline.textToImage({ ...base, seed: 8 })).rgb).not.toEqual(first.rgb);
    expect((await pipeline.textToImage({ ...base, prompt: "a red house" })).rgb).not.toEqual(first.rgb);
    const guided = await pipeline.textToImage({ ...base, cfgScale: 7.5, negativePrompt: "blurry" });
    expect(guided.rgb).not.toEqual(first.rgb);
    await pipeline.dispose();
  });

  it("batched and unbatched guidance agree (one UNet call for both halves, or two)", async () => {
    const dir = join(root, "sd-cfg");
    await writeStableDiffusionModel(dir);
    const pipeline = await StableDiffusionPipeline.load(dir, { threads: 1, executionProviders: ["cpu"], sampler: "euler" });
    const options = { ...base, cfgScale: 5, negativePrompt: "ugly" };
    const batched = await pipeline.textToImage(options);
    (pipeline.info as { batchedGuidance: boolean }).batchedGuidance = false;
    const split = await pipeline.textToImage(options);
    let maxDiff = 0;
    for (let i = 0; i < batched.rgb.length; i++) maxDiff = Math.max(maxDiff, Math.abs(batched.rgb[i]! - split.rgb[i]!));
    expect(maxDiff).toBeLessThanOrEqual(1);
    await pipeline.dispose();
  });

  it("runs the safety checker found in safety_checker/ and reports its verdict", async () => {
    const flagged = join(root, "sd-flagged");
    await writeStableDiffusionModel(flagged);
    await writeSafetyCheckerModel(join(flagged, "safety_checker"), { verdict: "flag" });
    const pipeline = await StableDiffusionPipeline.load(flagged, { threads: 1, executionProviders: ["cpu"], sampler: "auto" });
    expect(pipeline.info.safetyChecker).toBe(true);
    expect((await pipeline.textToImage(base)).nsfw).toBe(true);
    expect((await pipeline.textToImage({ ...base, safetyCheck: false })).nsfw).toBeNull();
    await pipeline.dispose();

    const passing = join(root, "checker-pass");
    await writeSafetyCheckerModel(passing, { verdict: "pass" });
    const withPath = await StableDiffusionPipeline.load(flagged, { threads: 1, executionProviders: ["cpu"], sampler: "auto", safetyChecker: passing });
    expect((await withPath.textToImage(base)).nsfw).toBe(false);
    await withPath.dispose();
  });

  it("video frames: keyframes from seed + k, slerped noise between them, deterministic", async () => {
    const dir = join(root, "sd-video");
    await writeStableDiffusionModel(dir);
    const pipeline = await StableDiffusionPipeline.load(dir, { threads: 1, executionProviders: ["cpu"], sampler: "auto" });
    const collect = async () => {
      const frames: Uint8Array[] = [];
      let lastProgress = 0;
      await pipeline.generateFrames(
        { ...base, frames: 5, keyframeInterval: 4 },
        (rgb, index) => {
          expect(index).toBe(frames.length);
          frames.push(rgb);
        },
        { onProgress: (done, total) => (lastProgress = done / total) },
      );
      expect(lastProgress).toBe(1);
      return frames;
    };
    const frames = await collect();
    expect(frames).toHaveLength(5);
    // Frame 0 is keyframe 0: exactly the still image of the same seed.
    expect(frames[0]).toEqual((await pipeline.textToImage({ ...base, safetyCheck: false })).rgb);
    // Neighbouring frames are closer than the two keyframes.
    const distance = (a: Uint8Array, b: Uint8Array) => a.reduce((s, x, i) => s + Math.abs(x - b[i]!), 0);
    expect(distance(frames[0]!, frames[1]!)).toBeLessThan(distance(frames[0]!, frames[4]!));
    expect(await collect()).toEqual(frames);
    await pipeline.dispose();
  });

  it("refuses exports it cannot run, naming what is missing", async () => {
    await expect(StableDiffusionPipeline.load(join(root, "nowhere"), { threads: 1, executionProviders: ["cpu"], sampler: "auto" })).rejects.toThrow(/unet\/model.onnx is missing/);
  });
});
