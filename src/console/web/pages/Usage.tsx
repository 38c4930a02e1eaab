import { useEffect, useState } from "preact/hooks";
import { amount, apiJson, errorText } from "../api.ts";
import { BarChart, type Series } from "../components/BarChart.tsx";

interface UsageRow {
  date: string;
  model: string;
  requests: number;
  tokens: number;
  spendUsd: number;
  spendDiem: number;
}
interface Usage {
  days: string[];
  models: string[];
  data: UsageRow[];
}

function seriesOf(usage: Usage, pick: (row: UsageRow) => number): Series[] {
  return usage.models.map((model) => ({
    name: model,
    values: usage.days.map((day) => usage.data.filter((r) => r.date === day && r.model === model).reduce((sum, r) => sum + pick(r), 0)),
  }));
}

const usd = (v: number) => (v === 0 ? "$0" : v < 0.01 ? `$${v.toPrecision(2)}` : `$${v.toFixed(v < 1 ? 3 : 2)}`);

/** Requests and spend per day and model, node-wide, from GET /admin/usage. */
export function UsagePage() {
  const [days, setDays] = useState(14);
  const [usage, setUsage] = useState<Usage | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    apiJson<Usage>(`/admin/usage?days=${days}`)
      .then(setUsage)
      .catch((e) => setError(errorText(e)));
  }, [days]);
  if (error)
    return (
      <p class="error" role="alert">
        {error}
      </p>
    );
  if (!usage) return <p class="muted">Loading…</p>;
  const totals = usage.models.map((model) => {
    const rows = usage.data.filter((r) => r.model === model);
    return {
      model,
      requests: rows.reduce((s, r) => s + r.requests, 0),
      tokens: rows.reduce((s, r) => s + r.tokens, 0),
      usd: rows.reduce((s, r) => s + r.spendUsd, 0),
      diem: rows.reduce((s, r) => s + r.spendDiem, 0),
    };
  });
  return (
    <>
      <p class="row">
        <label>
          Window
          <select value={String(days)} onChange={(e) => setDays(Number(e.currentTarget.value))}>
            <option value="7">7 days</option>
            <option value="14">14 days</option>
            <option value="30">30 days</option>
            <option value="90">90 days</option>
          </select>
        </label>
      </p>
      <section class="card">
        <h2>Requests per day</h2>
        <BarChart id="chart-requests" labels={usage.days} series={seriesOf(usage, (r) => r.requests)} format={(v) => (Number.isInteger(v) ? String(v) : v.toFixed(1))} />
      </section>
      <section class="card">
        <h2>Spend per day (USD)</h2>
        <BarChart id="chart-spend" labels={usage.days} series={seriesOf(usage, (r) => r.spendUsd)} format={usd} />
      </section>
      <section>
        <h2>By model</h2>
        <table class="grid" id="usage-models">
          <thead>
            <tr>
              <th>Model</th>
              <th class="num">Requests</th>
              <th class="num">Tokens</th>
              <th class="num">USD</th>
              <th class="num">DIEM</th>
            </tr>
          </thead>
          <tbody>
            {totals.map((t) => (
              <tr key={t.model}>
                <td>{t.model}</td>
                <td class="num">{t.requests}</td>
                <td class="num">{t.tokens}</td>
                <td class="num">{amount(t.usd)}</td>
                <td class="num">{amount(t.diem)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
    </>
  );
}
