/**
 * Whether a comparison met its goal, said only as far as the rounds can tell. On a shared or
 * small machine one scenario's per-round ratios can spread over 0.2 or more, and a median of three
 * rounds cannot then tell 0.95 from 0.98. The interval below says how far the median can be
 * trusted, with no assumption about the distribution of the ratios: only that rounds are
 * independent and alternated.
 */

/** A confidence interval for the median, and the probability that it holds the true median. */
export interface MedianInterval {
  low: number;
  high: number;
  /** 1 - 2 P(Binomial(n, 1/2) < k) for the k-th smallest and k-th largest value. */
  coverage: number;
}

export type Verdict = "met" | "not met" | "undecided" | "too few rounds";

/** The coverage asked of the interval behind a verdict. */
export const VERDICT_COVERAGE = 0.9;

/** Fewest rounds for which the widest interval (smallest to largest round) reaches VERDICT_COVERAGE. */
export const ROUNDS_FOR_VERDICT = 5;

/** The median (the mean of the middle two for an even count). */
export function medianOf(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * The distribution-free interval for the median from order statistics: [x(k), x(n+1-k)] of the
 * sorted values holds the median with probability 1 - 2 P(B <= k - 1), B ~ Binomial(n, 1/2).
 * The narrowest one whose coverage is at least `minimumCoverage`; where even the smallest and
 * largest values fall short of it (fewer than 5 values for 90%), those two with their coverage.
 */
export function medianInterval(values: readonly number[], minimumCoverage = VERDICT_COVERAGE): MedianInterval {
  if (values.length === 0) throw new RangeError("no values");
  const sorted = [...values].sort((a, b) => a - b);
  const n = sorted.length;
  const coverageOf = (k: number) => 1 - 2 * binomialHalfCdf(n, k - 1);
  let k = 1;
  while (k + 1 <= Math.ceil(n / 2) && coverageOf(k + 1) >= minimumCoverage) k++;
  return { low: sorted[k - 1]!, high: sorted[n - k]!, coverage: coverageOf(k) };
}

/**
 * Met when the whole interval is at or above the goal, not met when it is wholly below, and
 * undecided when it straddles the goal: the rounds cannot tell, and more of them (or a quieter
 * machine) would. An interval that reaches less than `minimumCoverage` decides nothing.
 */
export function verdictOf(interval: MedianInterval, goal: number, minimumCoverage = VERDICT_COVERAGE): Verdict {
  if (interval.coverage < minimumCoverage) return "too few rounds";
  if (interval.low >= goal) return "met";
  if (interval.high < goal) return "not met";
  return "undecided";
}

/** P(B <= k) for B ~ Binomial(n, 1/2); 0 for k < 0. */
function binomialHalfCdf(n: number, k: number): number {
  let term = 0.5 ** n; // C(n, 0) / 2^n
  let sum = 0;
  for (let i = 0; i <= k && i <= n; i++) {
    sum += term;
    term = (term * (n - i)) / (i + 1);
  }
  return sum;
}
