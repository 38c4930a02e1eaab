import { describe, expect, it } from "vitest";
import { poolReports, pooledTable, type VersusReport } from "../../scripts/bench/pool.js";
import { medianInterval } from "../../scripts/bench/verdict.js";

const report = (scenarios: Record<string, { goal: number; ratios: number[] }>): VersusReport => ({
  scenarios: Object.entries(scenarios).map(([name, { goal, ratios }]) => ({
    name,
    label: `${name} label`,
    goal,
    medianRatio: [...ratios].sort((a, b) => a - b)[Math.floor(ratios.length / 2)]!,
    rounds: ratios.map((ratio) => ({ ratio })),
  })),
});

describe("bench --pool: several --vs-llama-server runs as one", () => {
  it("counts every round once: a verdict two undecided runs could not reach", () => {
    const first = report({ c1: { goal: 0.95, ratios: [0.97, 0.93, 0.99, 0.98, 1.01] } });
    const second = report({ c1: { goal: 0.95, ratios: [0.97, 0.98, 1.0, 0.99, 0.99] } });
    const [alone] = poolReports([first]);
    expect(alone!.verdict).toBe("undecided");
    const [pooled] = poolReports([first, second]);
    expect(pooled!.rounds).toBe(10);
    const all = [0.97, 0.93, 0.99, 0.98, 1.01, 0.97, 0.98, 1.0, 0.99, 0.99];
    expect(pooled!.interval).toEqual(medianInterval(all));
    expect(pooled!.interval).toMatchObject({ low: 0.97, high: 1.0 });
    expect(pooled!.medianRatio).toBeCloseTo(0.985, 12);
    expect(pooled!.reportMedians).toEqual([0.98, 0.99]);
    expect(pooled!.verdict).toBe("met");
    expect(pooledTable([pooled!])).toContain("| c1 label | 0.95 | 10 | **0.98** | 0.97–1.00 (97.9%) | met | 0.98, 0.99 |");
  });

  it("leaves out a scenario some run did not have, and refuses runs with different goals", () => {
    const both = report({ c1: { goal: 0.97, ratios: [1, 1, 1, 1, 1] }, c4: { goal: 0.95, ratios: [1, 1, 1, 1, 1] } });
    const onlyC1 = report({ c1: { goal: 0.97, ratios: [1, 1, 1, 1, 1] } });
    expect(poolReports([both, onlyC1]).map((p) => p.name)).toEqual(["c1"]);
    expect(() => poolReports([both, report({ c1: { goal: 0.9, ratios: [1, 1, 1, 1, 1] } })])).toThrow(/different goals/);
    expect(() => poolReports([])).toThrow(RangeError);
  });
});
