import type { ServerResponse } from "node:http";

/** What runs once the node has had no request in flight for `afterMs` (after at least one since the last time). */
export interface QuietSpell {
  afterMs: number;
  run: () => void;
  /** The spell is over: a request started after `run` (work `run` left pending should not go on). */
  interrupt?: () => void;
}

/**
 * Counts responses not yet closed: shutdown waits until only idle connections remain, and after a
 * quiet spell (none in flight for `quiet.afterMs`) `quiet.run` runs once. It runs again only after
 * more requests, so a node left alone does the work once, not on a timer; a request that starts
 * after it calls `quiet.interrupt`. The start counts as activity: the first spell follows it, so
 * what the start itself allocated is behind it too.
 */
export class InFlightRequests {
  private count = 0;
  private waiters: (() => void)[] = [];
  private quietTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly quiet?: QuietSpell) {
    this.armQuietSpell();
  }

  track(res: ServerResponse): void {
    if (this.count++ === 0) this.quiet?.interrupt?.();
    clearTimeout(this.quietTimer);
    this.quietTimer = undefined;
    res.once("close", () => {
      this.count--;
      if (this.count > 0) return;
      for (const waiter of this.waiters.splice(0)) waiter();
      this.armQuietSpell();
    });
  }

  /** No request in flight. */
  get idle(): boolean {
    return this.count === 0;
  }

  onIdle(callback: () => void): void {
    if (this.count === 0) callback();
    else this.waiters.push(callback);
  }

  /** No quiet spell runs after this (the server is closing). */
  stop(): void {
    clearTimeout(this.quietTimer);
    this.quietTimer = undefined;
    this.stopped = true;
  }

  private armQuietSpell(): void {
    const quiet = this.quiet;
    // Armed at the start and when the last response closes; a request that starts, or stop(),
    // clears it: so it runs once per spell and never while a request is in flight.
    if (!quiet || quiet.afterMs <= 0 || this.stopped || this.quietTimer) return;
    this.quietTimer = setTimeout(() => {
      this.quietTimer = undefined;
      quiet.run();
    }, quiet.afterMs);
    // A timer alone never keeps the process alive.
    this.quietTimer.unref();
  }
}
