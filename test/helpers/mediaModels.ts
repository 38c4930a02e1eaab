import { join } from "node:path";
import { ModelEntry } from "../../src/config/modelRegistry.js";
import { fixturesDir } from "./testServer.js";

/** Registry entries for the tiny image, video and embedding fixtures (generated once per run by globalSetup). */

export const tinySdPath = () => join(fixturesDir(), "tiny-sd");

export function tinyImageEntry(overrides: Partial<Record<string, unknown>> = {}): ModelEntry {
  const { image, ...rest } = overrides as { image?: Record<string, unknown> };
  return ModelEntry.parse({
    id: "tiny-sd",
    name: "Tiny SD",
    type: "image",
    backend: "onnx-diffusion",
    file: tinySdPath(),
    traits: ["default"],
    image: { threads: 1, defaultSteps: 4, defaultCfgScale: 1, defaultWidth: 256, defaultHeight: 256, ...image },
    ...rest,
  });
}

export function tinyVideoEntry(overrides: Partial<Record<string, unknown>> = {}): ModelEntry {
  const { image, video, ...rest } = overrides as { image?: Record<string, unknown>; video?: Record<string, unknown> };
  return ModelEntry.parse({
    id: "tiny-video",
    name: "Tiny Video",
    type: "video",
    backend: "onnx-diffusion",
    file: tinySdPath(),
    image: { threads: 1, defaultSteps: 2, defaultCfgScale: 1, ...image },
    video: { durations: ["1s", "2s", "3s"], resolutions: { "64p": 64, "128p": 128 }, defaultResolution: "64p", fps: 8, ...video },
    ...rest,
  });
}

export function tinyEmbeddingEntry(overrides: Partial<Record<string, unknown>> = {}): ModelEntry {
  const { embedding, ...rest } = overrides as { embedding?: Record<string, unknown> };
  return ModelEntry.parse({
    id: "tiny-embedding",
    type: "embedding",
    backend: "transformers",
    file: join(fixturesDir(), "tiny-embedding"),
    embedding: { supportsCustomDimensions: true, threads: 1, ...embedding },
    ...rest,
  });
}

export function tinyGgufEmbeddingEntry(overrides: Partial<Record<string, unknown>> = {}): ModelEntry {
  const { embedding, ...rest } = overrides as { embedding?: Record<string, unknown> };
  return ModelEntry.parse({
    id: "tiny-embedding-gguf",
    type: "embedding",
    backend: "llama",
    file: join(fixturesDir(), "tiny-embedding.gguf"),
    llama: { gpuLayers: 0 },
    embedding: { threads: 1, parallel: 2, ...embedding },
    ...rest,
  });
}

/** The tiny Swin2SR-layout upscaler (x2 per pass), priced $0.002 for 2x and $0.008 for 4x. */
export function tinyUpscaleEntry(overrides: Partial<Record<string, unknown>> = {}): ModelEntry {
  const { upscale, ...rest } = overrides as { upscale?: Record<string, unknown> };
  return ModelEntry.parse({
    id: "tiny-upscale",
    type: "upscale",
    backend: "transformers",
    file: join(fixturesDir(), "tiny-swin2sr"),
    onnx: { threads: 1 },
    upscale: { ...upscale },
    pricing: { upscale: { "2x": { usd: 0.002, diem: 0.002 }, "4x": { usd: 0.008, diem: 0.008 } } },
    ...rest,
  });
}

/** The tiny MODNet-layout matting model (light subjects kept, dark ground dropped), $0.001 a picture. */
export function tinyBackgroundRemovalEntry(overrides: Partial<Record<string, unknown>> = {}): ModelEntry {
  return ModelEntry.parse({
    id: "tiny-background-removal",
    type: "background-removal",
    backend: "transformers",
    file: join(fixturesDir(), "tiny-modnet"),
    onnx: { threads: 1 },
    pricing: { generation: { usd: 0.001, diem: 0.001 } },
    ...overrides,
  });
}

/** The tiny MusicGen (32 kHz, four codebooks, 50 frames a second) as a music model. */
export function tinyMusicgenEntry(overrides: Partial<Record<string, unknown>> = {}): ModelEntry {
  const { music, ...rest } = overrides as { music?: Record<string, unknown> };
  return ModelEntry.parse({
    id: "tiny-musicgen",
    type: "music",
    backend: "transformers",
    file: join(fixturesDir(), "tiny-musicgen"),
    onnx: { threads: 1 },
    music: { minDurationSeconds: 1, maxDurationSeconds: 30, defaultDurationSeconds: 5, ...music },
    ...rest,
  });
}
