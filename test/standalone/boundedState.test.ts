import { describe, expect, it } from "vitest";
import { BoundedMap } from "../../src/limits/BoundedMap.js";
import { RateLimiter } from "../../src/limits/RateLimiter.js";

describe("BoundedMap", () => {
  it("drops the least recently used entries past its bound, keeping those that may not be dropped", () => {
    const map = new BoundedMap<{ pinned: boolean }>({ maxEntries: 3, sweepEveryMs: 1000, now: () => 0, isExpired: () => false, canEvict: (v) => !v.pinned });
    map.set("pinned", { pinned: true });
    map.set("a", { pinned: false });
    map.set("b", { pinned: false });
    map.get("a");
    map.set("c", { pinned: false });
    expect(map.size).toBe(3);
    expect(map.get("b")).toBeUndefined();
    expect(map.get("pinned")).toEqual({ pinned: true });
    for (let i = 0; i < 10_000; i++) map.set(`stranger-${i}`, { pinned: false });
    expect(map.size).toBe(3);
    expect(map.get("pinned")).toBeDefined();
  });

  it("forgets expired entries on the next sweep, without being asked for them", () => {
    let now = 0;
    const map = new BoundedMap<number>({ maxEntries: 100, sweepEveryMs: 1000, now: () => now, isExpired: (until, t) => t >= until });
    for (let i = 0; i < 50; i++) map.set(`k${i}`, 500);
    map.set("late", 5000);
    now = 1000;
    map.get("late");
    expect(map.size).toBe(1);
  });
});

describe("RateLimiter state", () => {
  it("forgets a caller's window once it is over and nothing of it is in flight", () => {
    let now = 60_000;
    const limiter = new RateLimiter(() => now);
    const limit = { rpm: 10, tpm: 1000 };
    for (let i = 0; i < 1000; i++) limiter.admit(`caller-${i}`, limit);
    const running = limiter.reserveTokens("running", limit, 100);
    expect(running.allowed).toBe(true);
    expect(limiter.size).toBe(1001);
    now += 120_000;
    limiter.admit("new", limit);
    // The running request's window stays until it settles: its tokens are still counted.
    expect(limiter.size).toBe(2);
    expect(limiter.peek("running", limit).remainingTokens).toBe(900);
    if (running.allowed) running.reservation.settle(30);
    if (running.allowed) running.reservation.settle(30);
    expect(limiter.peek("running", limit).remainingTokens).toBe(970);
  });

  it("keeps at most its bound of callers", () => {
    const limiter = new RateLimiter(() => 0, 500);
    for (let i = 0; i < 5000; i++) limiter.admit(`caller-${i}`, { rpm: 10 });
    expect(limiter.size).toBe(500);
  });
});
