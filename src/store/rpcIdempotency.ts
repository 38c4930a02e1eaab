import { statement, type Db } from "./Store.js";

/**
 * RPC Idempotency-Key claims, per account. A claim without a response is a request still
 * running; the rules are api/rpc/IdempotencyStore.ts's.
 */

export interface IdempotencyClaim {
  bodyHash: string;
  network: string;
  /** JSON of the stored body; null while the first request runs. */
  response: string | null;
  /** JSON of the stored headers. */
  headers: string | null;
}

export function deleteIdempotencyClaimsBefore(db: Db, before: number): void {
  statement(db, "DELETE FROM rpc_idempotency WHERE created_at < ?").run(before);
}

export function findIdempotencyClaim(db: Db, accountId: string, key: string): IdempotencyClaim | undefined {
  return statement(db, "SELECT body_hash AS bodyHash, network, response, headers FROM rpc_idempotency WHERE account_id = ? AND key = ?").get(accountId, key) as
    | IdempotencyClaim
    | undefined;
}

export function insertIdempotencyClaim(db: Db, accountId: string, key: string, bodyHash: string, network: string, now: number): void {
  statement(db, "INSERT INTO rpc_idempotency (account_id, key, body_hash, network, created_at) VALUES (?, ?, ?, ?, ?)").run(accountId, key, bodyHash, network, now);
}

export function storeIdempotentResponse(db: Db, accountId: string, key: string, response: string, headers: string): void {
  statement(db, "UPDATE rpc_idempotency SET response = ?, headers = ? WHERE account_id = ? AND key = ?").run(response, headers, accountId, key);
}

/** Drops a claim that has no response yet (its request failed), so a retry runs. */
export function releaseIdempotencyClaim(db: Db, accountId: string, key: string): void {
  statement(db, "DELETE FROM rpc_idempotency WHERE account_id = ? AND key = ? AND response IS NULL").run(accountId, key);
}
