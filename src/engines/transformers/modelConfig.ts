import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { ModelEntry } from "../../config/modelRegistry.js";
import type { Pooling } from "../embeddingMath.js";

// Read from a transformers.js model directory without loading transformers.js itself (it costs
// about 165 MiB of memory and a second of start-up): GET /models describes unloaded models with these.

export const readJson = (path: string): Record<string, unknown> | undefined => (existsSync(path) ? (JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>) : undefined);

/** sentence-transformers' pooling config (1_Pooling/config.json), when the export has one. */
export function poolingOf(dir: string, configured: ModelEntry["embedding"]["pooling"]): Pooling {
  if (configured !== "auto") return configured;
  const st = readJson(join(dir, "1_Pooling", "config.json"));
  if (st?.pooling_mode_cls_token) return "cls";
  if (st?.pooling_mode_lasttoken) return "last";
  return "mean";
}

/** The tokens one input may have: the setting, else the tokenizer's limit bounded by the position table. */
export function inputLimit(dir: string, configured: number | undefined): number {
  if (configured) return configured;
  const tokenizerMax = Number(readJson(join(dir, "tokenizer_config.json"))?.model_max_length);
  const positions = Number(readJson(join(dir, "config.json"))?.max_position_embeddings);
  const candidates = [tokenizerMax, positions].filter((n) => Number.isFinite(n) && n > 0 && n < 1e7);
  return candidates.length ? Math.min(...candidates) : 512;
}

/** The vision-language families (config.json model_type) the transformers backend chats with: Idefics3's processor and image tokens. */
export const VISION_CHAT_FAMILIES = ["idefics3", "smolvlm"] as const;
