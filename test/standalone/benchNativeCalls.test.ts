import { describe, expect, it } from "vitest";
import { nativeCallFigures } from "../../scripts/bench/report.js";

// The bench's node-llama-cpp target reports its native jobs per output token: the evidence for
// where node-llama-cpp's per-token time goes (docs/bench.md, Metrics: native).
describe("bench: node-llama-cpp's native calls per output token", () => {
  it("takes the calls and the time between two snapshots, per token and per call", () => {
    const before = { decodeBatch: { calls: 10, ms: 20 }, sampleToken: { calls: 40, ms: 8 } };
    const after = { decodeBatch: { calls: 74, ms: 148 }, sampleToken: { calls: 296, ms: 59.2 } };
    expect(nativeCallFigures(before, after, 256)).toEqual({ decodeBatchPerToken: 0.25, decodeBatchMsEach: 2, sampleTokenPerToken: 1, sampleTokenMsEach: 0.2 });
  });

  it("gives zero time for a job that was not called, and counts against no tokens without dividing by zero", () => {
    const same = { decodeBatch: { calls: 3, ms: 1 }, sampleToken: { calls: 3, ms: 1 } };
    expect(nativeCallFigures(same, same, 0)).toEqual({ decodeBatchPerToken: 0, decodeBatchMsEach: 0, sampleTokenPerToken: 0, sampleTokenMsEach: 0 });
  });
});
