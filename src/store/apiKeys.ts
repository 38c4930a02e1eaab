import { createHash, randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import { statement, type Db } from "./Store.js";

/**
 * API keys are random 32-byte secrets shown once; only their SHA-256 hash is stored.
 * Lookup is by hash (an index), then the hashes are compared in constant time.
 */

export type ApiKeyType = "ADMIN" | "INFERENCE";

export interface ApiKeyRecord {
  id: string;
  /** Per-period spending caps in micros (null: no cap). */
  limitUsdMicros: number | null;
  limitDiemMicros: number | null;
  limitPeriod: "EPOCH" | "MONTH" | "LIFETIME";
  rateLimitTier: "standard" | "partner";
  /** JSON of LimitOverrides, or null. */
  rateLimitOverrides: string | null;
  accountId: string;
  description: string;
  keyType: ApiKeyType;
  /** An operator key (ADMIN only): grants credit and manages the node, not just its account. */
  operator: boolean;
  /**
   * A gateway's key on a pool node (INFERENCE only): many callers arrive through it, so it is
   * held to no per-key rate limit, no abuse block and no one caller's share of the body budget
   * (the gateway applies its callers' own); the node's capacity and the key's credit still apply.
   */
  gateway: boolean;
  last6: string;
  createdAt: number;
  expiresAt: number | null;
  revokedAt: number | null;
  lastUsedAt: number | null;
}

const SELECT = `SELECT id, account_id AS accountId, description, key_type AS keyType, last6, created_at AS createdAt,
  expires_at AS expiresAt, revoked_at AS revokedAt, last_used_at AS lastUsedAt, limit_usd_micros AS limitUsdMicros,
  limit_diem_micros AS limitDiemMicros, limit_period AS limitPeriod, rate_limit_tier AS rateLimitTier,
  rate_limit_overrides AS rateLimitOverrides, operator, gateway FROM api_keys`;

/** SQLite has no booleans: the operator and gateway flags are stored as 0/1. */
const toRecord = <T extends { operator: unknown; gateway: unknown }>(row: T): T & { operator: boolean; gateway: boolean } => ({
  ...row,
  operator: row.operator === 1,
  gateway: row.gateway === 1,
});

export const hashSecret = (secret: string) => createHash("sha256").update(secret, "utf8").digest("hex");

export interface ApiKeySettings {
  description?: string;
  expiresAt?: number | null;
  limitUsdMicros?: number | null;
  limitDiemMicros?: number | null;
  limitPeriod?: ApiKeyRecord["limitPeriod"];
  rateLimitTier?: ApiKeyRecord["rateLimitTier"];
  rateLimitOverrides?: string | null;
  gateway?: boolean;
}

export function createApiKey(
  db: Db,
  options: { accountId: string; description: string; keyType: ApiKeyType; operator?: boolean } & ApiKeySettings,
  now = Date.now(),
): { record: ApiKeyRecord; secret: string } {
  if (options.operator && options.keyType !== "ADMIN") throw new RangeError("an operator key must be an admin key");
  if (options.gateway && options.keyType !== "INFERENCE") throw new RangeError("a gateway key must be an inference key");
  const secret = `hth_${randomBytes(32).toString("base64url")}`;
  const record: ApiKeyRecord = {
    id: randomUUID(),
    accountId: options.accountId,
    description: options.description,
    keyType: options.keyType,
    operator: options.operator === true,
    gateway: options.gateway === true,
    last6: secret.slice(-6),
    createdAt: now,
    expiresAt: options.expiresAt ?? null,
    revokedAt: null,
    lastUsedAt: null,
    limitUsdMicros: options.limitUsdMicros ?? null,
    limitDiemMicros: options.limitDiemMicros ?? null,
    limitPeriod: options.limitPeriod ?? "EPOCH",
    rateLimitTier: options.rateLimitTier ?? "standard",
    rateLimitOverrides: options.rateLimitOverrides ?? null,
  };
  statement(
    db,
    `INSERT INTO api_keys (id, account_id, description, key_type, secret_hash, last6, created_at, expires_at,
       limit_usd_micros, limit_diem_micros, limit_period, rate_limit_tier, rate_limit_overrides, operator, gateway)
     VALUES (@id, @accountId, @description, @keyType, @hash, @last6, @createdAt, @expiresAt,
       @limitUsdMicros, @limitDiemMicros, @limitPeriod, @rateLimitTier, @rateLimitOverrides, @operatorFlag, @gatewayFlag)`,
  ).run({ ...record, operatorFlag: record.operator ? 1 : 0, gatewayFlag: record.gateway ? 1 : 0, hash: hashSecret(secret) });
  return { record, secret };
}

/** The key a secret belongs to, if it exists, is not revoked and has not expired. */
export function findActiveKey(db: Db, secret: string, now = Date.now()): ApiKeyRecord | undefined {
  const hash = hashSecret(secret);
  const row = statement(db, `${SELECT.replace("FROM api_keys", ", secret_hash AS secretHash FROM api_keys")} WHERE secret_hash = ?`).get(hash) as
    | (ApiKeyRecord & { secretHash: string })
    | undefined;
  if (!row) return undefined;
  if (!timingSafeEqual(Buffer.from(row.secretHash, "hex"), Buffer.from(hash, "hex"))) return undefined;
  if (row.revokedAt !== null || (row.expiresAt !== null && row.expiresAt <= now)) return undefined;
  const { secretHash: _hash, ...record } = row;
  return toRecord(record);
}

export function touchApiKey(db: Db, id: string, now = Date.now()): void {
  statement(db, "UPDATE api_keys SET last_used_at = ? WHERE id = ?").run(now, id);
}

export function listApiKeys(db: Db, accountId?: string): ApiKeyRecord[] {
  const rows = (
    accountId ? statement(db, `${SELECT} WHERE account_id = ? ORDER BY created_at`).all(accountId) : statement(db, `${SELECT} ORDER BY created_at`).all()
  ) as ApiKeyRecord[];
  return rows.map(toRecord);
}

export function getApiKey(db: Db, id: string): ApiKeyRecord | undefined {
  const row = statement(db, `${SELECT} WHERE id = ?`).get(id) as ApiKeyRecord | undefined;
  return row && toRecord(row);
}

/** Whether a key is an active operator key (checked on every node-wide admin request). */
export function isOperatorKey(db: Db, id: string): boolean {
  return statement(db, "SELECT operator FROM api_keys WHERE id = ? AND key_type = 'ADMIN' AND revoked_at IS NULL").pluck().get(id) === 1;
}

/** Whether the node has any key yet (its first admin key becomes the operator's). */
export function hasAnyKey(db: Db): boolean {
  return statement(db, "SELECT 1 FROM api_keys LIMIT 1").get() !== undefined;
}

/** Revocation takes effect on the next request: every request looks the key up afresh. */
export function revokeApiKey(db: Db, id: string, now = Date.now()): boolean {
  return statement(db, "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL").run(now, id).changes > 0;
}

const SETTING_COLUMNS: Record<keyof ApiKeySettings, string> = {
  description: "description",
  expiresAt: "expires_at",
  limitUsdMicros: "limit_usd_micros",
  limitDiemMicros: "limit_diem_micros",
  limitPeriod: "limit_period",
  rateLimitTier: "rate_limit_tier",
  rateLimitOverrides: "rate_limit_overrides",
  gateway: "gateway",
};

/** Updates the given settings of a key; returns the updated record (undefined if no such key). */
export function updateApiKey(db: Db, id: string, settings: ApiKeySettings): ApiKeyRecord | undefined {
  const entries = Object.entries(settings).filter(([, value]) => value !== undefined) as [keyof ApiKeySettings, unknown][];
  if (entries.length > 0) {
    const assignments = entries.map(([name]) => `${SETTING_COLUMNS[name]} = @${name}`).join(", ");
    // SQLite binds no booleans (the gateway flag is 0/1).
    const values = entries.map(([name, value]) => [name, typeof value === "boolean" ? Number(value) : value]);
    statement(db, `UPDATE api_keys SET ${assignments} WHERE id = @id`).run({ ...Object.fromEntries(values), id });
  }
  return getApiKey(db, id);
}

/** A key's consumption limits in micros (null: no cap) and the period they reset over. */
export interface KeySpendLimits {
  usdMicros: number | null;
  diemMicros: number | null;
  period: ApiKeyRecord["limitPeriod"];
}

export function getKeySpendLimits(db: Db, id: string): KeySpendLimits | undefined {
  return statement(db, "SELECT limit_usd_micros AS usdMicros, limit_diem_micros AS diemMicros, limit_period AS period FROM api_keys WHERE id = ?").get(id) as
    | KeySpendLimits
    | undefined;
}

/** The reference's modelPrivacy of a key (migration 3): which models it may call, by privacy tier (limits/modelPrivacy.ts checks it; docs/billing.md says where). */
export type ModelPrivacy = "ALL" | "PRIVATE_TEXT" | "PRIVATE_ONLY";

/** A key's modelPrivacy; ALL for an unknown key. */
export function getKeyModelPrivacy(db: Db, id: string): ModelPrivacy {
  return (statement(db, "SELECT model_privacy FROM api_keys WHERE id = ?").pluck().get(id) as ModelPrivacy | undefined) ?? "ALL";
}

/** The modelPrivacy of every key of an account, by key id. */
export function accountKeyModelPrivacies(db: Db, accountId: string): Map<string, ModelPrivacy> {
  const rows = statement(db, "SELECT id, model_privacy AS privacy FROM api_keys WHERE account_id = ?").all(accountId) as { id: string; privacy: ModelPrivacy }[];
  return new Map(rows.map((row) => [row.id, row.privacy]));
}

export function setKeyModelPrivacy(db: Db, id: string, privacy: ModelPrivacy): void {
  statement(db, "UPDATE api_keys SET model_privacy = ? WHERE id = ?").run(privacy, id);
}

/**
 * The key with this secret hash, whatever its state (the abuse guard tells known keys from
 * guesses), and whether it is an active gateway key (which the guard leaves alone).
 */
export function keyBySecretHash(db: Db, secretHash: string, now = Date.now()): { id: string; activeGateway: boolean } | undefined {
  const row = statement(db, "SELECT id, gateway, revoked_at AS revokedAt, expires_at AS expiresAt FROM api_keys WHERE secret_hash = ?").get(secretHash) as
    | { id: string; gateway: number; revokedAt: number | null; expiresAt: number | null }
    | undefined;
  if (!row) return undefined;
  return { id: row.id, activeGateway: row.gateway === 1 && row.revokedAt === null && (row.expiresAt === null || row.expiresAt > now) };
}
