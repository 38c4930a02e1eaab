import { readFileSync } from "node:fs";
import { type MedianInterval, medianInterval, medianOf, type Verdict, verdictOf } from "./verdict.js";

/** What pooling reads of a `--vs-llama-server --json` report. */
export interface VersusReport {
  date?: string;
  scenarios: { name: string; label: string; goal: number; medianRatio: number; rounds: { ratio: number }[] }[];
}

export interface PooledScenario {
  name: string;
  label: string;
  goal: number;
  rounds: number;
  medianRatio: number;
  interval: MedianInterval;
  verdict: Verdict;
  /** Each report's own median, in the order given. */
  reportMedians: number[];
}

/**
 * Several `--vs-llama-server` runs of the same code on the same machine, taken as one: every
 * round's ratio counts once, so the interval for the median narrows as rounds add up. Each run
 * alternated its own rounds, which is what makes their ratios comparable. A scenario missing
 * from any report is left out.
 */
export function poolReports(reports: readonly VersusReport[]): PooledScenario[] {
  if (reports.length === 0) throw new RangeError("no reports to pool");
  return reports[0]!.scenarios.flatMap((first) => {
    const matching = reports.map((report) => report.scenarios.find((s) => s.name === first.name));
    if (matching.some((s) => s === undefined)) return [];
    const scenarios = matching as NonNullable<(typeof matching)[number]>[];
    if (scenarios.some((s) => s.goal !== first.goal)) throw new Error(`the reports set different goals for ${first.name}`);
    const ratios = scenarios.flatMap((s) => s.rounds.map((r) => r.ratio));
    const interval = medianInterval(ratios);
    return [
      {
        name: first.name,
        label: first.label,
        goal: first.goal,
        rounds: ratios.length,
        medianRatio: medianOf(ratios),
        interval,
        verdict: verdictOf(interval, first.goal),
        reportMedians: scenarios.map((s) => s.medianRatio),
      },
    ];
  });
}

export function readReports(files: readonly string[]): VersusReport[] {
  return files.map((file) => JSON.parse(readFileSync(file, "utf8")) as VersusReport);
}

export function pooledTable(pooled: readonly PooledScenario[]): string {
  const f = (x: number) => x.toFixed(2);
  const rows = pooled.map(
    (p) =>
      `| ${p.label} | ${p.goal} | ${p.rounds} | **${f(p.medianRatio)}** | ${f(p.interval.low)}–${f(p.interval.high)} (${Math.round(p.interval.coverage * 1000) / 10}%) | ${p.verdict} | ${p.reportMedians.map(f).join(", ")} |`,
  );
  return ["| scenario | goal | rounds | median ratio | interval (coverage) | verdict | each run's median |", "|---|--:|--:|--:|--:|---|---|", ...rows].join("\n");
}
