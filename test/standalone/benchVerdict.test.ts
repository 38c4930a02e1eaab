import { describe, expect, it } from "vitest";
import { ROUNDS_FOR_VERDICT, medianInterval, verdictOf } from "../../scripts/bench/verdict.js";

/** A small seeded generator (mulberry32), so the coverage check below is the same on every run. */
function seeded(seed: number) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe("bench verdict: the median ratio's interval and what it decides", () => {
  it("uses the k-th smallest and largest round with the binomial coverage of that pair", () => {
    // n = 5: only the extremes reach 90% (1 - 2/32); the next pair in would be 1 - 2 * 6/32.
    expect(medianInterval([1.0, 0.9, 1.02, 0.95, 0.98])).toEqual({ low: 0.9, high: 1.02, coverage: 1 - 2 / 32 });
    // n = 8: the second smallest and second largest (1 - 2 * 9/256); the third pair is 1 - 2 * 37/256 < 0.9.
    const eight = medianInterval([8, 1, 7, 2, 6, 3, 5, 4]);
    expect(eight).toEqual({ low: 2, high: 7, coverage: 1 - (2 * 9) / 256 });
    // n = 3: even the extremes only hold the median three times in four.
    expect(medianInterval([0.9, 1.1, 1.0]).coverage).toBeCloseTo(0.75, 12);
  });

  it("holds the true median as often as its coverage says (samples from a skewed distribution)", () => {
    const random = seeded(14);
    // Exponential with rate 1: median ln 2, long right tail like a busy host's slow rounds.
    const draw = () => -Math.log(1 - random());
    for (const n of [5, 8, 12]) {
      const trials = 4000;
      let held = 0;
      let coverage = 0;
      for (let t = 0; t < trials; t++) {
        const interval = medianInterval(Array.from({ length: n }, draw));
        coverage = interval.coverage;
        if (interval.low <= Math.LN2 && Math.LN2 <= interval.high) held++;
      }
      expect(coverage).toBeGreaterThanOrEqual(0.9);
      expect(Math.abs(held / trials - coverage), `n = ${n}`).toBeLessThan(0.02);
    }
  });

  it("says met, not met or undecided only when the interval reaches 90%", () => {
    const rounds = [0.98, 0.99, 1.0, 1.01, 1.02];
    expect(rounds).toHaveLength(ROUNDS_FOR_VERDICT);
    expect(verdictOf(medianInterval(rounds), 0.97)).toBe("met");
    expect(verdictOf(medianInterval(rounds), 0.98)).toBe("met");
    expect(verdictOf(medianInterval(rounds), 1.0)).toBe("undecided");
    expect(verdictOf(medianInterval(rounds), 1.03)).toBe("not met");
    // Three rounds all above the goal still decide nothing at 90%.
    expect(verdictOf(medianInterval([1.1, 1.2, 1.3]), 0.95)).toBe("too few rounds");
    expect(verdictOf(medianInterval(rounds.slice(0, ROUNDS_FOR_VERDICT - 1)), 0.95)).toBe("too few rounds");
  });
});
