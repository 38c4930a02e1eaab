import type { ModelEntry } from "../config/modelRegistry.js";
import type { Db } from "../store/Store.js";

/** The reference's modelPrivacy of a key: which models it may call, by privacy tier. */
export type ModelPrivacy = "ALL" | "PRIVATE_TEXT" | "PRIVATE_ONLY";

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
  return (db.prepare("SELECT model_privacy FROM api_keys WHERE id = ?").pluck().get(apiKeyId) as ModelPrivacy | undefined) ?? "ALL";
}
