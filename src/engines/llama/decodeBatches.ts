import type { CustomBatchingPrioritizationStrategy, PrioritizedBatchItem } from "node-llama-cpp";

/** What the decode calls of one context looked like: how many, and how full. */
export interface DecodeBatchStats {
  /** llama.cpp decode calls. */
  batches: number;
  /** Tokens decoded in them (prompt and generated). */
  tokens: number;
  /** Decode calls by how many sequences took part: `{ "4": 120, "3": 2 }`. */
  sequencesPerBatch: Record<string, number>;
}

/**
 * Chooses what goes into each decode call and counts the calls. Every queued sequence gets an
 * equal share of the batch (so a long prompt never shuts out the sequences that are generating,
 * which need one token each), and what is left goes to the sequences with more to evaluate, the
 * higher evaluation priority first. node-llama-cpp calls the strategy once per decode, which is
 * what makes the count exact: it is how a test and GET /admin/models see whether generating
 * sequences share their steps.
 */
export class DecodeBatches {
  private batches = 0;
  private tokens = 0;
  private readonly sequencesPerBatch = new Map<number, number>();

  readonly strategy: CustomBatchingPrioritizationStrategy = ({ items, size }) => {
    const chosen = fairShare(items, size);
    let tokens = 0;
    let sequences = 0;
    for (const { processAmount } of chosen) {
      if (processAmount <= 0) continue;
      tokens += processAmount;
      sequences++;
    }
    if (sequences > 0) {
      this.batches++;
      this.tokens += tokens;
      this.sequencesPerBatch.set(sequences, (this.sequencesPerBatch.get(sequences) ?? 0) + 1);
    }
    return chosen;
  };

  stats(): DecodeBatchStats {
    const sequencesPerBatch: Record<string, number> = {};
    for (const [sequences, count] of [...this.sequencesPerBatch].sort((a, b) => a[0] - b[0])) sequencesPerBatch[sequences] = count;
    return { batches: this.batches, tokens: this.tokens, sequencesPerBatch };
  }
}

type Items = Parameters<CustomBatchingPrioritizationStrategy>[0]["items"];

function fairShare(items: Items, size: number): PrioritizedBatchItem[] {
  const share = Math.max(1, Math.floor(size / Math.max(1, items.length)));
  let left = size;
  const chosen: PrioritizedBatchItem[] = [];
  for (const item of items) {
    if (left <= 0) break;
    const processAmount = Math.min(item.tokens.length, share, left);
    chosen.push({ item, processAmount });
    left -= processAmount;
  }
  if (left > 0) {
    // The rest of the batch to whoever still has tokens waiting, higher priority first (stable order).
    const unfinished = chosen.filter((c) => c.processAmount < c.item.tokens.length);
    unfinished.sort((a, b) => b.item.evaluationPriority - a.item.evaluationPriority);
    for (const entry of unfinished) {
      if (left <= 0) break;
      const more = Math.min(entry.item.tokens.length - entry.processAmount, left);
      entry.processAmount += more;
      left -= more;
    }
  }
  return chosen;
}
