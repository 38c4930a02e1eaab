import type { ModelEntry } from "../config/modelRegistry.js";
import { getKeyModelPrivacy, type ModelPrivacy } from "../store/apiKeys.js";
import type { Db } from "../store/Store.js";

export type { ModelPrivacy };

/**
 * Whether a key with this modelPrivacy may call a model: `ALL` any model; `PRIVATE_TEXT`
 * text and embedding models only when private (other types may be anonymized);
 * `PRIVATE_ONLY` private models only.
 */
export function modelPrivacyAllows(privacy: ModelPrivacy, entry: Pick<ModelEntry, "privacy" | "type">): boolean {
  if (privacy === "ALL" || entry.privacy === "private") return true;
  return privacy === "PRIVATE_TEXT" && entry.type !== "text" && entry.type !== "embedding";
}

export function keyModelPrivacy(db: Db, apiKeyId: string): ModelPrivacy {
  return getKeyModelPrivacy(db, apiKeyId);
}
