/** A stacked bar chart as inline SVG: one bar per label, one colored segment per series. */

export interface Series {
  name: string;
  values: number[];
}

const COLORS = ["#d9622b", "#2b7bd9", "#3a9d5d", "#9b59b6", "#c9a227", "#16a2a2", "#b03a5b", "#6d7a88"];
export const colorOf = (index: number) => COLORS[index % COLORS.length]!;

export function BarChart({ labels, series, format = String, id }: { labels: string[]; series: Series[]; format?: (v: number) => string; id?: string }) {
  const width = 960;
  const height = 240;
  const pad = { top: 12, right: 8, bottom: 28, left: 56 };
  const totals = labels.map((_, i) => series.reduce((sum, s) => sum + (s.values[i] ?? 0), 0));
  const max = Math.max(...totals, 0);
  const top = max > 0 ? niceCeiling(max) : 1;
  const plotW = width - pad.left - pad.right;
  const plotH = height - pad.top - pad.bottom;
  const slot = plotW / Math.max(labels.length, 1);
  const barW = Math.max(2, slot * 0.7);
  const y = (v: number) => pad.top + plotH - (v / top) * plotH;
  const ticks = [0, top / 2, top];
  const every = Math.ceil(labels.length / 10);
  return (
    <figure class="chart" id={id}>
      <svg viewBox={`0 0 ${width} ${height}`} role="img" aria-label="bar chart">
        {ticks.map((t) => (
          <g key={t}>
            <line x1={pad.left} x2={width - pad.right} y1={y(t)} y2={y(t)} class="gridline" />
            <text x={pad.left - 6} y={y(t) + 4} text-anchor="end" class="tick">
              {format(t)}
            </text>
          </g>
        ))}
        {labels.map((label, i) => {
          let base = 0;
          const x = pad.left + i * slot + (slot - barW) / 2;
          return (
            <g key={label}>
              {series.map((s, j) => {
                const v = s.values[i] ?? 0;
                if (v <= 0) return null;
                const rect = (
                  <rect key={s.name} x={x} y={y(base + v)} width={barW} height={y(base) - y(base + v)} fill={colorOf(j)} class="bar" data-value={v}>
                    <title>{`${label} · ${s.name}: ${format(v)}`}</title>
                  </rect>
                );
                base += v;
                return rect;
              })}
              {i % every === 0 && (
                <text x={x + barW / 2} y={height - 10} text-anchor="middle" class="tick">
                  {label.slice(5)}
                </text>
              )}
            </g>
          );
        })}
      </svg>
      <figcaption class="legend">
        {series.map((s, j) => (
          <span key={s.name}>
            <i style={{ background: colorOf(j) }} />
            {s.name}
          </span>
        ))}
      </figcaption>
    </figure>
  );
}

/** 1, 2 or 5 times a power of ten, at least `value`: round axis maxima. */
function niceCeiling(value: number): number {
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}
