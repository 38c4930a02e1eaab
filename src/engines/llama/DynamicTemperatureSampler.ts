import type { Token } from "node-llama-cpp";
import { mulberry32 } from "../../random.js";

/**
 * Entropy-scaled temperature ("dynatemp", llama.cpp's temp_ext sampler), which
 * node-llama-cpp does not expose. The sequence samples at temperature 1 after top-k /
 * top-p / min-p and returns the candidates' probabilities; this picks the token again at
 * a temperature between `min` and `max` scaled by the candidates' normalized entropy:
 * T = min + (max - min) * H / log(n). Sure predictions run cool, unsure ones hot.
 */
export class DynamicTemperatureSampler {
  private readonly random: () => number;

  constructor(
    private readonly min: number,
    private readonly max: number,
    seed: number,
  ) {
    this.random = mulberry32(seed);
  }

  /** Picks a token from the candidates (sorted or not) and reports the temperature used. */
  sample(candidates: ReadonlyMap<Token, number>): { token: Token; temperature: number } {
    const entries = [...candidates].filter(([, p]) => p > 0);
    if (entries.length === 0) throw new Error("no candidate tokens to sample from");
    if (entries.length === 1) return { token: entries[0]![0], temperature: this.min };
    let entropy = 0;
    for (const [, p] of entries) entropy -= p * Math.log(p);
    const normalized = entropy / Math.log(entries.length);
    const temperature = this.min + (this.max - this.min) * normalized;
    if (temperature <= 0) return { token: argmax(entries), temperature };
    // p^(1/T), renormalized, equals softmax(logit / T) over the same candidates.
    const weights = entries.map(([, p]) => Math.exp(Math.log(p) / temperature));
    const total = weights.reduce((a, b) => a + b, 0);
    let r = this.random() * total;
    for (const [i, weight] of weights.entries()) {
      r -= weight;
      if (r <= 0) return { token: entries[i]![0], temperature };
    }
    return { token: entries.at(-1)![0], temperature };
  }
}

function argmax(entries: [Token, number][]): Token {
  let best = entries[0]!;
  for (const entry of entries) if (entry[1] > best[1]) best = entry;
  return best[0];
}
