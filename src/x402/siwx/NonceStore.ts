import { countNonces, deleteExpiredNonces, insertNonce, renewExpiredNonce } from "../../store/siwxNonces.js";
import type { Db } from "../../store/Store.js";

/**
 * Sign-in nonces, single use. A nonce is recorded only after its signature verified (so no one
 * can burn a victim's nonce with a forged sign-in) and kept until the sign-in it came with
 * could no longer be accepted anyway; then it is evicted. In SQLite, so a restart does not
 * reopen the replay window and several processes on one database share it.
 */
export class NonceStore {
  private lastSweep = 0;

  constructor(
    private readonly db: Db,
    private readonly now: () => number,
    private readonly sweepEveryMs = 30_000,
  ) {}

  /** Records the nonce; false when it was already used. */
  consume(key: string, expiresAt: number): boolean {
    const now = this.now();
    if (now - this.lastSweep >= this.sweepEveryMs) {
      this.lastSweep = now;
      deleteExpiredNonces(this.db, now);
    }
    if (insertNonce(this.db, key, expiresAt)) return true;
    // A stale row that the sweep has not reached yet no longer protects anything: take it over.
    return renewExpiredNonce(this.db, key, expiresAt, now);
  }

  size(): number {
    return countNonces(this.db);
  }
}
