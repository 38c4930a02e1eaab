import { describe, expect, it } from "vitest";
import { bestCandidates } from "../../src/api/completions/service.js";

const candidate = (index: number, logprobs: number[] | null) => ({ index, logprobs: logprobs?.map((logprob) => ({ logprob })) ?? null });

describe("best_of's choice of candidates", () => {
  it("ranks by mean log probability per token, not by the sum (a longer candidate is not penalised)", () => {
    const kept = bestCandidates([candidate(0, [-1]), candidate(1, [-0.5, -0.5, -0.5, -0.5])], { n: 1, candidates: 2 });
    expect(kept).toEqual([{ index: 0, logprobs: [{ logprob: -0.5 }, { logprob: -0.5 }, { logprob: -0.5 }, { logprob: -0.5 }] }]);
  });

  it("puts a candidate without tokens last and keeps the generated order on ties", () => {
    const kept = bestCandidates([candidate(0, []), candidate(1, [-2]), candidate(2, [-1, -3])], { n: 3, candidates: 3 });
    expect(kept.map((c) => c.logprobs?.length)).toEqual([1, 2, 0]);
    expect(kept.map((c) => c.index)).toEqual([0, 1, 2]);
  });

  it("chooses within each prompt and numbers the kept ones as n choices per prompt", () => {
    const kept = bestCandidates([candidate(0, [-3]), candidate(1, [-1]), candidate(2, [-2]), candidate(3, [-0.1]), candidate(4, [-5]), candidate(5, [-0.2])], {
      n: 2,
      candidates: 3,
    });
    expect(kept.map((c) => [c.index, c.logprobs![0]!.logprob])).toEqual([
      [0, -1],
      [1, -2],
      [2, -0.1],
      [3, -0.2],
    ]);
  });
});
