/**
 * A Map for per-caller state that strangers can create: entries expire (the caller says when,
 * through `isExpired`), expired entries are swept at most once per `sweepEveryMs`, and past
 * `maxEntries` the least recently used entries that may be dropped (`canEvict`) go first.
 * A read or a write makes an entry the most recently used.
 */
export class BoundedMap<V> {
  private readonly entries = new Map<string, V>();
  private nextSweep = 0;

  constructor(
    private readonly options: {
      maxEntries: number;
      sweepEveryMs: number;
      now: () => number;
      isExpired: (value: V, now: number) => boolean;
      /** Entries that must not be dropped (e.g. with tokens in flight); true when absent. */
      canEvict?: (value: V) => boolean;
    },
  ) {}

  get(key: string): V | undefined {
    this.sweep();
    const value = this.entries.get(key);
    if (value === undefined) return undefined;
    if (this.options.isExpired(value, this.options.now())) {
      this.entries.delete(key);
      return undefined;
    }
    // Most recently used last.
    this.entries.delete(key);
    this.entries.set(key, value);
    return value;
  }

  set(key: string, value: V): void {
    this.sweep();
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.options.maxEntries) this.evict();
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  get size(): number {
    return this.entries.size;
  }

  private evict(): void {
    const canEvict = this.options.canEvict ?? (() => true);
    for (const [key, value] of this.entries) {
      if (this.entries.size <= this.options.maxEntries) return;
      if (canEvict(value)) this.entries.delete(key);
    }
  }

  private sweep(): void {
    const now = this.options.now();
    if (now < this.nextSweep) return;
    this.nextSweep = now + this.options.sweepEveryMs;
    for (const [key, value] of this.entries) if (this.options.isExpired(value, now)) this.entries.delete(key);
  }
}
