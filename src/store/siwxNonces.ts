import { statement, type Db } from "./Store.js";

/** Used sign-in nonces, each kept until `expires_at`; x402/siwx/NonceStore.ts decides when to sweep. */

export function deleteExpiredNonces(db: Db, now: number): void {
  statement(db, "DELETE FROM siwx_nonces WHERE expires_at < ?").run(now);
}

/** Records a nonce; false when it is already recorded. */
export function insertNonce(db: Db, key: string, expiresAt: number): boolean {
  return statement(db, "INSERT INTO siwx_nonces (key, expires_at) VALUES (?, ?) ON CONFLICT (key) DO NOTHING").run(key, expiresAt).changes === 1;
}

/** Re-records a nonce whose row expired before `now`; false when the row is still live (or absent). */
export function renewExpiredNonce(db: Db, key: string, expiresAt: number, now: number): boolean {
  return statement(db, "UPDATE siwx_nonces SET expires_at = ? WHERE key = ? AND expires_at < ?").run(expiresAt, key, now).changes === 1;
}

export function countNonces(db: Db): number {
  return statement(db, "SELECT COUNT(*) FROM siwx_nonces").pluck().get() as number;
}
