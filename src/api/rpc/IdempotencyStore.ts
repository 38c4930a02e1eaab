import { InvalidRequestError, RateLimitError } from "../../errors.js";
import type { Db } from "../../store/Store.js";

export interface StoredResponse {
  body: unknown;
  headers: Record<string, string>;
}

/**
 * Idempotency-Key for the RPC proxy, per account: the first request claims the key, its
 * answer is stored when it succeeds (and the claim dropped when it fails, so a retry runs),
 * and within the TTL the same key and body replay the stored answer without a new charge.
 */
export class IdempotencyStore {
  constructor(
    private readonly db: Db,
    private readonly ttlMs: number,
    private readonly now: () => number,
  ) {}

  /** Either the stored answer to replay, or the claim (undefined) for this request to fill. */
  claim(accountId: string, key: string, network: string, bodyHash: string): StoredResponse | undefined {
    return this.db
      .transaction(() => {
        const now = this.now();
        this.db.prepare("DELETE FROM rpc_idempotency WHERE created_at < ?").run(now - this.ttlMs);
        const row = this.db.prepare("SELECT body_hash, network, response, headers FROM rpc_idempotency WHERE account_id = ? AND key = ?").get(accountId, key) as
          | { body_hash: string; network: string; response: string | null; headers: string | null }
          | undefined;
        if (!row) {
          this.db.prepare("INSERT INTO rpc_idempotency (account_id, key, body_hash, network, created_at) VALUES (?, ?, ?, ?, ?)").run(accountId, key, bodyHash, network, now);
          return undefined;
        }
        if (row.body_hash !== bodyHash || row.network !== network) {
          throw InvalidRequestError.forField(["Idempotency-Key"], "this key was already used with a different request body; use a new key");
        }
        if (row.response === null) throw new RateLimitError("A request with this Idempotency-Key is still in progress; retry when it has finished");
        return { body: JSON.parse(row.response) as unknown, headers: JSON.parse(row.headers ?? "{}") as Record<string, string> };
      })
      .immediate();
  }

  complete(accountId: string, key: string, response: StoredResponse): void {
    this.db
      .prepare("UPDATE rpc_idempotency SET response = ?, headers = ? WHERE account_id = ? AND key = ?")
      .run(JSON.stringify(response.body), JSON.stringify(response.headers), accountId, key);
  }

  release(accountId: string, key: string): void {
    this.db.prepare("DELETE FROM rpc_idempotency WHERE account_id = ? AND key = ? AND response IS NULL").run(accountId, key);
  }
}
