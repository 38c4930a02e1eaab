import { InvalidRequestError, RateLimitError } from "../../errors.js";
import { deleteIdempotencyClaimsBefore, findIdempotencyClaim, insertIdempotencyClaim, releaseIdempotencyClaim, storeIdempotentResponse } from "../../store/rpcIdempotency.js";
import type { Db } from "../../store/Store.js";
import { inTransaction } from "../../store/transaction.js";

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
    return inTransaction(this.db, () => {
      const now = this.now();
      deleteIdempotencyClaimsBefore(this.db, now - this.ttlMs);
      const claim = findIdempotencyClaim(this.db, accountId, key);
      if (!claim) {
        insertIdempotencyClaim(this.db, accountId, key, bodyHash, network, now);
        return undefined;
      }
      if (claim.bodyHash !== bodyHash || claim.network !== network) {
        throw InvalidRequestError.forField(["Idempotency-Key"], "this key was already used with a different request body; use a new key");
      }
      if (claim.response === null) throw new RateLimitError("A request with this Idempotency-Key is still in progress; retry when it has finished");
      return { body: JSON.parse(claim.response) as unknown, headers: JSON.parse(claim.headers ?? "{}") as Record<string, string> };
    });
  }

  complete(accountId: string, key: string, response: StoredResponse): void {
    storeIdempotentResponse(this.db, accountId, key, JSON.stringify(response.body), JSON.stringify(response.headers));
  }

  release(accountId: string, key: string): void {
    releaseIdempotencyClaim(this.db, accountId, key);
  }
}
