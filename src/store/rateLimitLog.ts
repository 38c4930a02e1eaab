import { statement, type Db } from "./Store.js";

/** One refused call (a rate limit or an abuse block); read back by recentRateLimitLog in usageEntries.ts. */
export interface RateLimitRejection {
  accountId: string | null;
  apiKeyId: string | null;
  modelId: string | null;
  tier: string;
  limitType: string;
  createdAt: number;
}

export function logRateLimitRejection(db: Db, rejection: RateLimitRejection): void {
  statement(db, "INSERT INTO rate_limit_log (account_id, api_key_id, model_id, tier, limit_type, created_at) VALUES (?, ?, ?, ?, ?, ?)").run(
    rejection.accountId,
    rejection.apiKeyId,
    rejection.modelId,
    rejection.tier,
    rejection.limitType,
    rejection.createdAt,
  );
}

/** Every logged refusal, oldest first. */
export function listRateLimitRejections(db: Db): RateLimitRejection[] {
  return statement(
    db,
    "SELECT account_id AS accountId, api_key_id AS apiKeyId, model_id AS modelId, tier, limit_type AS limitType, created_at AS createdAt FROM rate_limit_log ORDER BY id",
  ).all() as RateLimitRejection[];
}
