import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { basename, join } from "node:path";
import type { ModelEntry } from "../config/modelRegistry.js";
import type { Backend } from "../engines/backendNames.js";
import { directorySize } from "../engines/onnx/directorySize.js";
import { VISION_CHAT_FAMILIES } from "../engines/transformers/modelConfig.js";

/** What `hearth models add` learned about a model file or directory, and the registry entry it proposes. */
export interface ModelInspection {
  backend: Backend;
  type: ModelEntry["type"];
  /** Facts shown to the user (architecture, parameters, context length...). */
  facts: Record<string, string | number | boolean>;
  /** The entry's fields besides id and file, in models.config.json's input form. */
  entry: Record<string, unknown>;
}

/** GGUF architectures that are encoders only: they embed, they do not chat. */
const EMBEDDING_ARCHITECTURES = new Set(["bert", "nomic-bert", "nomic-bert-moe", "jina-bert-v2", "t5encoder", "modern-bert", "neo-bert"]);

/**
 * Reads a local model without loading it (no network): a GGUF file's header (node-llama-cpp),
 * or an ONNX directory's layout, matched against the layouts our engines load.
 */
export async function inspectModel(path: string): Promise<ModelInspection> {
  if (!existsSync(path)) throw new Error(`${path} does not exist`);
  if (statSync(path).isFile()) return inspectGguf(path);
  return inspectOnnxDirectory(path);
}

async function inspectGguf(path: string): Promise<ModelInspection> {
  const { readGgufFileInfo, GgufInsights, GgmlType } = await import("node-llama-cpp");
  let info: Awaited<ReturnType<typeof readGgufFileInfo>>;
  try {
    info = await readGgufFileInfo(path);
  } catch (error) {
    throw new Error(`${path} is neither a model directory nor a readable GGUF file: ${(error as Error).message}`);
  }
  const insights = await GgufInsights.from(info);
  const architecture = String(info.metadata.general?.architecture ?? "unknown");
  const archMeta = info.architectureMetadata as { context_length?: number; pooling_type?: number };
  const trainContext = insights.trainContextSize ?? archMeta.context_length;
  const chatTemplate = typeof info.metadata.tokenizer?.chat_template === "string";
  const embedding = EMBEDDING_ARCHITECTURES.has(architecture) || (archMeta.pooling_type !== undefined && archMeta.pooling_type > 0);
  const dominant = insights.dominantTensorType;
  const facts: ModelInspection["facts"] = {
    format: "GGUF",
    architecture,
    name: String(info.metadata.general?.name ?? basename(path)),
    parameters: insights.totalParameters,
    fileBytes: statSync(path).size,
    tensorType: dominant !== undefined ? (GgmlType[dominant] ?? String(dominant)) : "unknown",
    contextLength: trainContext ?? "unknown",
    chatTemplate,
  };
  const quantization = quantizationOf(dominant !== undefined ? GgmlType[dominant] : undefined);
  if (embedding) {
    return { backend: "llama", type: "embedding", facts, entry: { type: "embedding", backend: "llama", name: facts.name } };
  }
  const { probeChatFeatures } = await import("../engines/llama/probeChatFeatures.js");
  const features = await probeChatFeatures(path);
  Object.assign(facts, { functionCalling: features.functionCalling, reasoning: features.reasoning });
  return {
    backend: "llama",
    type: "text",
    facts,
    entry: {
      name: facts.name,
      type: "text",
      backend: "llama",
      // The configured context is explicit: the training context when it is smaller than the default.
      ...(trainContext && trainContext < 4096 ? { llama: { contextSize: trainContext } } : {}),
      capabilities: {
        quantization,
        supportsFunctionCalling: features.functionCalling,
        supportsReasoning: features.reasoning,
        supportsReasoningEffort: features.reasoningToggle,
        supportsResponseSchema: true,
        supportsLogProbs: true,
      },
    },
  };
}

function quantizationOf(tensorType: string | undefined): string {
  if (!tensorType) return "not-available";
  if (tensorType === "F16") return "fp16";
  if (tensorType === "BF16") return "bf16";
  if (tensorType.startsWith("Q8")) return "int8";
  if (tensorType.startsWith("Q4") || tensorType.startsWith("IQ4")) return "int4";
  return "not-available";
}

/** Which of our ONNX backends a directory is for, by the files each loader reads. */
async function inspectOnnxDirectory(dir: string): Promise<ModelInspection> {
  const has = (...parts: string[]) => existsSync(join(dir, ...parts));
  const config = has("config.json") ? (JSON.parse(readFileSync(join(dir, "config.json"), "utf8")) as { model_type?: string; architectures?: string[] }) : {};
  const facts: ModelInspection["facts"] = { format: "ONNX", directoryBytes: await directorySize(dir) };
  if (config.model_type) facts.modelType = config.model_type;
  if (config.architectures?.[0]) facts.architecture = config.architectures[0];

  if (has("model_index.json") && has("unet") && has("vae_decoder") && has("text_encoder")) {
    facts.safetyChecker = has("safety_checker");
    return { backend: "onnx-diffusion", type: "image", facts, entry: { type: "image", backend: "onnx-diffusion" } };
  }
  const onnxFiles = has("onnx") ? readdirSync(join(dir, "onnx")).filter((f) => f.endsWith(".onnx")) : [];
  if (onnxFiles.length === 0) throw new Error(`${dir} has no onnx/*.onnx weights and no model_index.json: not a layout Hearth loads`);
  facts.weights = onnxFiles.join(", ");
  if (config.model_type === "style_text_to_speech_2" || (has("voices") && onnxFiles.includes("model.onnx") && config.model_type !== "vits")) {
    const voices = has("voices")
      ? readdirSync(join(dir, "voices"))
          .filter((f) => f.endsWith(".bin"))
          .map((f) => f.slice(0, -4))
      : [];
    facts.voices = voices.join(", ");
    return { backend: "kokoro", type: "tts", facts, entry: { type: "tts", backend: "kokoro" } };
  }
  if ((VISION_CHAT_FAMILIES as readonly string[]).includes(config.model_type ?? "")) {
    // Pictures in chat; video only where the operator sets vision.videoFrames (SmolVLM2 takes frames, the config does not say).
    return { backend: "transformers", type: "text", facts, entry: { type: "text", backend: "transformers", vision: { maxImages: 4 } } };
  }
  if (config.model_type === "vits") return { backend: "vits", type: "tts", facts, entry: { type: "tts", backend: "vits" } };
  if (config.model_type === "musicgen") return { backend: "transformers", type: "music", facts, entry: { type: "music", backend: "transformers" } };
  if (config.model_type === "whisper" || onnxFiles.some((f) => f.startsWith("encoder_model"))) {
    return { backend: "whisper", type: "asr", facts, entry: { type: "asr", backend: "whisper" } };
  }
  if (has("tokenizer.json") && onnxFiles.some((f) => f.startsWith("model"))) {
    return { backend: "transformers", type: "embedding", facts, entry: { type: "embedding", backend: "transformers" } };
  }
  throw new Error(`${dir}: could not tell which backend loads it (expected a Kokoro, VITS, Whisper, MusicGen, sentence-embedding, Idefics3/SmolVLM or diffusers ONNX layout)`);
}

/** A model id from a file name: letters, digits, '.', '_', '-'. */
export function idFromPath(path: string): string {
  const name = basename(path).replace(/\.gguf$/i, "");
  const cleaned = name.replace(/[^A-Za-z0-9._-]+/g, "-").replace(/^[^A-Za-z0-9]+/, "");
  return cleaned || "model";
}
