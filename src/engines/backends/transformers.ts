import { join } from "node:path";
import { EmbeddingSettings, MusicSettings, OnnxSettings, UpscaleSettings, VisionSettings } from "../../config/backendSettings.js";
import { alwaysServable, importEngineModules, needsFile, type BackendDescriptor } from "../BackendDescriptor.js";
import { prepareImageCodec } from "../../media/image.js";
import { estimateOnnxMemory } from "../onnx/estimateOnnxMemory.js";
import { inputLimit, readJson } from "../transformers/modelConfig.js";

/**
 * transformers.js ONNX models: embedding encoders, vision-language chat models (type "text":
 * Idefics3 / SmolVLM exports, pictures and video frames in chat), super-resolution (upscale),
 * background-removal and text-to-music (MusicGen exports) models. transformers.js is imported
 * once the node listens when the registry has such models, not before it listens (about a second
 * of start-up), and never on a node without them (about 165 MiB of memory a chat-only node never needs).
 */
export const transformersBackend: BackendDescriptor = {
  serves: ["embedding", "text", "upscale", "background-removal", "music"],
  settings: { embedding: EmbeddingSettings, onnx: OnnxSettings, vision: VisionSettings, upscale: UpscaleSettings, music: MusicSettings },
  entryProblems: needsFile('a transformers model needs its model directory in "file"'),
  servable: alwaysServable,
  load: async (entry, options) => {
    if (entry.type === "text") return (await import("../transformers/TransformersVisionChatEngine.js")).TransformersVisionChatEngine.load(entry, options.gpu);
    if (entry.type === "upscale") return (await import("../transformers/UpscaleEngine.js")).TransformersUpscaleEngine.load(entry, options.gpu);
    if (entry.type === "music") return (await import("../transformers/MusicWorkerEngine.js")).MusicWorkerEngine.load(entry, options.gpu);
    if (entry.type === "background-removal") return (await import("../transformers/BackgroundRemovalEngine.js")).TransformersBackgroundRemovalEngine.load(entry, options.gpu);
    return (await import("../transformers/TransformersEmbeddingEngine.js")).TransformersEmbeddingEngine.load(entry, options.gpu);
  },
  // Vision chat and music run their models on worker threads; the others evaluate
  // transformers.js on the event loop.
  prepare: importEngineModules((entries) => {
    const types = new Set(entries.map((entry) => entry.type));
    return [
      types.has("embedding") && import("../transformers/TransformersEmbeddingEngine.js"),
      types.has("upscale") && import("../transformers/UpscaleEngine.js"),
      types.has("background-removal") && import("../transformers/BackgroundRemovalEngine.js"),
      // Upscaling and background removal read and write pictures with sharp, vision chat reads them.
      (types.has("upscale") || types.has("background-removal") || types.has("text")) && prepareImageCodec(),
    ].filter((module) => module !== false);
  }),
  estimateMemory: (entry, gpu) =>
    estimateOnnxMemory(entry.file!, { copies: 1, executionProviders: entry.type === "embedding" ? entry.embedding.executionProviders : entry.onnx.executionProviders, gpu }),
  embeddingShape(entry) {
    if (!entry.file) return {};
    const hidden = Number(readJson(join(entry.file, "config.json"))?.hidden_size);
    return { dimensions: Number.isFinite(hidden) && hidden > 0 ? hidden : undefined, maxInputTokens: inputLimit(entry.file, undefined) };
  },
  // What the vision chat engine renders itself: no tool calls, thought blocks, grammars or log probabilities.
  probeChatFeatures: async () => ({ functionCalling: false, reasoning: false, reasoningToggle: false, responseSchema: false, logprobs: false }),
  visualInput: (entry) => ({
    kind: "decoded",
    maxImages: entry.vision.maxImages,
    maxVideos: entry.vision.videoFrames > 0 ? entry.vision.maxVideos : 0,
    maxImagePixels: entry.vision.maxImagePixels,
    videoFrames: entry.vision.videoFrames,
  }),
  contextSize: async (entry, loaded) => {
    if (loaded?.kind === "chat") return loaded.contextSize;
    const config = entry.file ? (readJson(join(entry.file, "config.json")) as { text_config?: { max_position_embeddings?: number } } | undefined) : undefined;
    return entry.vision.contextSize ?? config?.text_config?.max_position_embeddings ?? 2048;
  },
};
