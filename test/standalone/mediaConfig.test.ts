import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { applyStyle, ImageStyles } from "../../src/api/images/styles.js";
import { sizeForAspectRatio } from "../../src/api/images/service.js";
import { embeddingCost, imageCost, UnpricedDurationError, videoCost } from "../../src/billing/pricing.js";
import { ConfigError } from "../../src/config/ConfigError.js";
import { ModelEntry } from "../../src/config/modelRegistry.js";
import { CheckedModelsConfig } from "../../src/models/loadModelsConfig.js";
import { testTempDir } from "../helpers/tempDir.js";

const entry = (fields: Record<string, unknown>) => ModelEntry.parse({ id: "m", file: "/models/m", ...fields });
const issues = (models: unknown[]) => {
  const parsed = CheckedModelsConfig.safeParse({ models });
  return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
};

describe("media entries in models.config.json", () => {
  it("checks that the backend serves the type, and the pricing shape of the type", () => {
    expect(issues([{ id: "a", type: "text", backend: "onnx-diffusion", file: "/x" }])).toEqual([
      "models.0.backend: the onnx-diffusion backend serves image, inpaint and video models, not text",
    ]);
    expect(issues([{ id: "a", type: "image", backend: "onnx-diffusion" }])).toEqual(['models.0.file: a onnx-diffusion model needs its model directory in "file"']);
    expect(issues([{ id: "a", type: "image", backend: "onnx-diffusion", file: "/x", pricing: { input: { usd: 1, diem: 1 } } }])[0]).toMatch(/image models are priced per image/);
    expect(issues([{ id: "a", type: "video", backend: "onnx-diffusion", file: "/x", video: { defaultResolution: "4k" } }])[0]).toMatch(/video.defaultResolution: must be one of/);
    expect(issues([{ id: "a", type: "embedding", backend: "transformers", file: "/x", pricing: { input: { usd: 1, diem: 1 } } }])).toEqual([]);
  });

  it("fills image, video and embedding defaults", () => {
    const image = entry({ type: "image", backend: "onnx-diffusion" });
    expect(image.image).toMatchObject({ scheduler: "auto", defaultSteps: 20, maxSteps: 50, widthHeightDivisor: 8, workers: 1, executionProviders: "auto" });
    expect(image.video.durations).toEqual(["1s", "2s", "3s", "4s", "5s"]);
    expect(image.embedding).toMatchObject({ pooling: "auto", normalize: true, supportsCustomDimensions: false, batchSize: 32 });
  });

  it("derives sizes from aspect ratios on the model's grid", () => {
    const image = entry({ type: "image", backend: "onnx-diffusion", image: { defaultWidth: 512, defaultHeight: 512 } });
    expect(sizeForAspectRatio("1:1", image)).toEqual({ width: 512, height: 512 });
    expect(sizeForAspectRatio("16:9", image)).toEqual({ width: 680, height: 384 });
    expect(() => sizeForAspectRatio("wide", image)).toThrow(/not an aspect ratio/);
  });
});

describe("media pricing", () => {
  it("images: per image, the smallest step class covering the steps, else generation", () => {
    const image = entry({
      type: "image",
      backend: "onnx-diffusion",
      pricing: { generation: { usd: 0.01, diem: 0.02 }, steps: { turbo: { usd: 0.001, diem: 0.001, max_steps: 4 }, fast: { usd: 0.005, diem: 0.005, max_steps: 12 } } },
    });
    expect(imageCost(image, { images: 2, steps: 4 })).toEqual([{ sku: "m-image-turbo", units: 2, pricePerUnitUsd: 0.001, usdMicros: 2000, diemMicros: 2000 }]);
    expect(imageCost(image, { images: 1, steps: 8 })[0]).toMatchObject({ sku: "m-image-fast", usdMicros: 5000 });
    expect(imageCost(image, { images: 3, steps: 30 })[0]).toMatchObject({ sku: "m-image-generation", usdMicros: 30_000, diemMicros: 60_000 });
    expect(imageCost(entry({ type: "image", backend: "onnx-diffusion" }), { images: 1, steps: 1 })).toEqual([]);
  });

  it("video: per second (per resolution when priced), or by duration tier", () => {
    const perSecond = entry({ type: "video", backend: "onnx-diffusion", pricing: { per_second: { usd: 0.1, diem: 0.1 }, resolutions: { "512p": { usd: 0.3, diem: 0.3 } } } });
    expect(videoCost(perSecond, { seconds: 5, resolution: "256p" })[0]).toMatchObject({ sku: "m-video-second", usdMicros: 500_000 });
    expect(videoCost(perSecond, { seconds: 5, resolution: "512p" })[0]).toMatchObject({ sku: "m-video-second-512p", usdMicros: 1_500_000 });
    const tiers = entry({ type: "video", backend: "onnx-diffusion", pricing: { durations: { short: { usd: 0.5, diem: 0.5, min_seconds: 1, max_seconds: 5 } } } });
    expect(videoCost(tiers, { seconds: 5, resolution: "256p" })[0]).toMatchObject({ sku: "m-video-short", usdMicros: 500_000, units: 1 });
    expect(() => videoCost(tiers, { seconds: 6, resolution: "256p" })).toThrow(UnpricedDurationError);
  });

  it("embeddings: per million input tokens", () => {
    const embedding = entry({ type: "embedding", backend: "transformers", pricing: { input: { usd: 0.5, diem: 0.5 } } });
    expect(embeddingCost(embedding, 2_000_000)[0]).toMatchObject({ sku: "m-embedding-input-mtoken", usdMicros: 1_000_000, units: 2 });
    expect(embeddingCost(embedding, 0)).toEqual([]);
  });
});

describe("image style presets", () => {
  it("ships a default list and reads image-styles.json beside the registry", () => {
    const bundled = ImageStyles.load(join(testTempDir("hearth-styles-"), "models.config.json"));
    expect(bundled.names()).toEqual(expect.arrayContaining(["3D Model", "Analog Film", "Anime", "Cinematic", "Comic Book"]));
    const dir = testTempDir("hearth-styles-");
    writeFileSync(
      join(dir, "image-styles.json"),
      JSON.stringify({ styles: [{ name: "House", prompt: "{prompt} in our house style", negative_prompt: "text" }, { name: "Plain" }] }),
    );
    const custom = ImageStyles.load(join(dir, "models.config.json"));
    expect(custom.names()).toEqual(["House", "Plain"]);
    expect(applyStyle(custom.find("house")!, "a cat", "blurry")).toEqual({ prompt: "a cat in our house style", negativePrompt: "blurry, text" });
    expect(applyStyle(custom.find("Plain")!, "a cat", "")).toEqual({ prompt: "a cat", negativePrompt: "" });
    expect(applyStyle({ name: "x", prompt: "watercolour", negative_prompt: "" }, "a cat", "")).toEqual({ prompt: "a cat, watercolour", negativePrompt: "" });
    writeFileSync(join(dir, "image-styles.json"), JSON.stringify({ styles: [{ title: "no name" }] }));
    expect(() => ImageStyles.load(join(dir, "models.config.json"))).toThrow(ConfigError);
  });
});
