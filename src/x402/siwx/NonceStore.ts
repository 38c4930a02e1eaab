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
      this.db.prepare("DELETE FROM siwx_nonces WHERE expires_at < ?").run(now);
    }
    const inserted = this.db.prepare("INSERT INTO siwx_nonces (key, expires_at) VALUES (?, ?) ON CONFLICT (key) DO NOTHING").run(key, expiresAt).changes;
    if (inserted === 1) return true;
    // A stale row that the sweep has not reached yet no longer protects anything: take it over.
    return this.db.prepare("UPDATE siwx_nonces SET expires_at = ? WHERE key = ? AND expires_at < ?").run(expiresAt, key, now).changes === 1;
  }

  size(): number {
    return this.db.prepare("SELECT COUNT(*) FROM siwx_nonces").pluck().get() as number;
  }
}
