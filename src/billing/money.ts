/**
 * Money is integer micro-units (1e-6 USD or DIEM) from pricing to the ledger; floats appear
 * only at the API edge, where amounts are shown in whole units.
 */
export const MICROS = 1_000_000;

export const microsToUnits = (micros: number) => micros / MICROS;

/** Parses a non-negative decimal amount of whole units into micros, exactly (no float rounding drift). */
export function unitsToMicros(amount: number): number {
  if (!Number.isFinite(amount) || amount < 0) throw new RangeError(`not a valid amount: ${amount}`);
  return Math.round(amount * MICROS);
}

/**
 * One priced item of a request, as the usage endpoints report it: `units` of `sku` at a price
 * per unit. The amounts are what it costs when paid in USD and when paid in DIEM.
 */
export interface CostLine {
  sku: string;
  units: number;
  pricePerUnitUsd: number;
  usdMicros: number;
  diemMicros: number;
}

/** A line for `count` items priced per `per` items (e.g. tokens priced per million). Rounds up to the micro. */
export function costLine(sku: string, count: number, per: number, price: { usd: number; diem: number }): CostLine {
  // Prices become integer micros per `per` items first, so the product stays an exact integer.
  const usd = Math.ceil((count * Math.round(price.usd * MICROS)) / per);
  const diem = Math.ceil((count * Math.round(price.diem * MICROS)) / per);
  return { sku, units: count / per, pricePerUnitUsd: price.usd, usdMicros: usd, diemMicros: diem };
}

export const totalUsd = (lines: readonly CostLine[]) => lines.reduce((sum, l) => sum + l.usdMicros, 0);
export const totalDiem = (lines: readonly CostLine[]) => lines.reduce((sum, l) => sum + l.diemMicros, 0);
