import { existsSync, mkdirSync, renameSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { PACKAGE_ROOT } from "../../src/config/packageRoot.js";
import { QWEN25_05B_SHAPE, QWEN25_15B_SHAPE, QWEN25_HEADER_SHAPE, TINY_CHAT, writeChatModel, type ChatModelShape } from "../../src/fixtures/gguf/chatModel.js";

/** Generated models are cached here (under data/, which git ignores) and reused across runs. */
export const BENCH_MODELS_DIR = join(PACKAGE_ROOT, "data", "bench-models");

/** The random-weight models `--generate` can write; speed does not depend on weight values. */
export const GENERATED_MODELS = {
  tiny: { file: "tiny-chat.gguf", shape: TINY_CHAT },
  "qwen-0.5b-q8": { file: "qwen2.5-0.5b-shape-v2-q8_0.gguf", shape: { ...QWEN25_05B_SHAPE, weightType: "Q8_0" } },
  "qwen-0.5b-f16": { file: "qwen2.5-0.5b-shape-v2-f16.gguf", shape: { ...QWEN25_05B_SHAPE, weightType: "F16" } },
  "qwen-1.5b-q8": { file: "qwen2.5-1.5b-shape-q8_0.gguf", shape: { ...QWEN25_15B_SHAPE, weightType: "Q8_0" } },
  // Qwen2.5's vocabulary on one 32-wide layer: a decode step about as short as a GPU's for the
  // 0.5B model, with the real vocabulary's sampling and detokenization, so that the per-step cost
  // outside the decode can be studied on a CPU.
  "qwen-vocab-q8": { file: "qwen2.5-vocab-1-layer-q8_0.gguf", shape: { ...QWEN25_HEADER_SHAPE, weightType: "Q8_0" } },
} as const satisfies Record<string, { file: string; shape: ChatModelShape }>;
export type GeneratedModelName = keyof typeof GENERATED_MODELS;

export interface ModelFile {
  path: string;
  bytes: number;
  /** Set when this run wrote the file: how long generating it took. */
  generatedInMs?: number;
}

/** The cached file of a generated model, written first (atomically, with progress on stderr) if missing. */
export async function ensureGeneratedModel(name: GeneratedModelName): Promise<ModelFile> {
  const { file, shape } = GENERATED_MODELS[name];
  const path = join(BENCH_MODELS_DIR, file);
  if (existsSync(path)) return { path, bytes: statSync(path).size };

  mkdirSync(BENCH_MODELS_DIR, { recursive: true });
  const partial = `${path}.partial-${process.pid}`;
  const startedAt = performance.now();
  let lastDecile = -1;
  const progress = (done: number, total: number) => {
    const decile = Math.floor((done / total) * 10);
    if (decile === lastDecile) return;
    lastDecile = decile;
    process.stderr.write(`\rgenerating ${file}: ${decile * 10}%`);
  };
  if (!process.stderr.isTTY) process.stderr.write(`generating ${path}\n`);
  try {
    await writeChatModel(partial, shape, process.stderr.isTTY ? progress : undefined);
  } catch (error) {
    rmSync(partial, { force: true });
    throw error;
  }
  renameSync(partial, path);
  const generatedInMs = performance.now() - startedAt;
  process.stderr.write(`${process.stderr.isTTY ? "\r" : ""}generated ${path} in ${(generatedInMs / 1000).toFixed(1)} s\n`);
  return { path, bytes: statSync(path).size, generatedInMs };
}
