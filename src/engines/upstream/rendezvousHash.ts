import { createHash } from "node:crypto";

/** What rendezvous hashing needs of a replica: a stable name and its share of the keys. */
export interface RendezvousTarget {
  readonly id: string;
  readonly weight: number;
}

/**
 * Weighted rendezvous (highest-random-weight) score of `key` on one replica: -weight / ln(h),
 * h the hash of (replica, key) read as a number in (0, 1). The replica with the highest score
 * owns the key; each replica owns a share of all keys proportional to its weight, and adding or
 * removing one moves only the keys it gains or held (every other pair's score is unchanged).
 */
export function rendezvousScore(key: string, target: RendezvousTarget): number {
  const digest = createHash("sha256").update(target.id).update("\0").update(key).digest();
  // 48 bits are plenty for ordering; +0.5 keeps h strictly inside (0, 1) so ln(h) is finite and negative.
  const h = (digest.readUIntBE(0, 6) + 0.5) / 2 ** 48;
  return -target.weight / Math.log(h);
}

/** The replicas in the order `key` prefers them: its owner first, then where it goes if the owner cannot take it. */
export function rendezvousOrder<T extends RendezvousTarget>(key: string, targets: readonly T[]): T[] {
  return targets
    .map((target) => ({ target, score: rendezvousScore(key, target) }))
    .sort((a, b) => b.score - a.score)
    .map(({ target }) => target);
}
