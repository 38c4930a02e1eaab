import { createHash, randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import type { Db } from "./Store.js";

/**
 * API keys are random 32-byte secrets shown once; only their SHA-256 hash is stored.
 * Lookup is by hash (an index), then the hashes are compared in constant time.
 */

export type ApiKeyType = "ADMIN" | "INFERENCE";

export interface ApiKeyRecord {
  id: string;
  accountId: string;
  description: string;
  keyType: ApiKeyType;
  last6: string;
  createdAt: number;
  expiresAt: number | null;
  revokedAt: number | null;
  lastUsedAt: number | null;
}

const SELECT = `SELECT id, account_id AS accountId, description, key_type AS keyType, last6, created_at AS createdAt,
  expires_at AS expiresAt, revoked_at AS revokedAt, last_used_at AS lastUsedAt FROM api_keys`;

export const hashSecret = (secret: string) => createHash("sha256").update(secret, "utf8").digest("hex");

export function createApiKey(
  db: Db,
  options: { accountId: string; description: string; keyType: ApiKeyType; expiresAt?: number | null },
  now = Date.now(),
): { record: ApiKeyRecord; secret: string } {
  const secret = `hth_${randomBytes(32).toString("base64url")}`;
  const record: ApiKeyRecord = {
    id: randomUUID(),
    accountId: options.accountId,
    description: options.description,
    keyType: options.keyType,
    last6: secret.slice(-6),
    createdAt: now,
    expiresAt: options.expiresAt ?? null,
    revokedAt: null,
    lastUsedAt: null,
  };
  db.prepare(
    `INSERT INTO api_keys (id, account_id, description, key_type, secret_hash, last6, created_at, expires_at)
     VALUES (@id, @accountId, @description, @keyType, @hash, @last6, @createdAt, @expiresAt)`,
  ).run({ ...record, hash: hashSecret(secret) });
  return { record, secret };
}

/** The key a secret belongs to, if it exists, is not revoked and has not expired. */
export function findActiveKey(db: Db, secret: string, now = Date.now()): ApiKeyRecord | undefined {
  const hash = hashSecret(secret);
  const row = db.prepare(`${SELECT.replace("FROM api_keys", ", secret_hash AS secretHash FROM api_keys")} WHERE secret_hash = ?`).get(hash) as
    | (ApiKeyRecord & { secretHash: string })
    | undefined;
  if (!row) return undefined;
  if (!timingSafeEqual(Buffer.from(row.secretHash, "hex"), Buffer.from(hash, "hex"))) return undefined;
  if (row.revokedAt !== null || (row.expiresAt !== null && row.expiresAt <= now)) return undefined;
  const { secretHash: _hash, ...record } = row;
  return record;
}

export function touchApiKey(db: Db, id: string, now = Date.now()): void {
  db.prepare("UPDATE api_keys SET last_used_at = ? WHERE id = ?").run(now, id);
}

export function listApiKeys(db: Db, accountId?: string): ApiKeyRecord[] {
  return (accountId
    ? db.prepare(`${SELECT} WHERE account_id = ? ORDER BY created_at`).all(accountId)
    : db.prepare(`${SELECT} ORDER BY created_at`).all()) as ApiKeyRecord[];
}

export function getApiKey(db: Db, id: string): ApiKeyRecord | undefined {
  return db.prepare(`${SELECT} WHERE id = ?`).get(id) as ApiKeyRecord | undefined;
}

/** Revocation takes effect on the next request: every request looks the key up afresh. */
export function revokeApiKey(db: Db, id: string, now = Date.now()): boolean {
  return db.prepare("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL").run(now, id).changes > 0;
}
