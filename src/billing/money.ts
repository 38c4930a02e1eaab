import { MICROS } from "../store/micros.js";

// The unit conversions live with the store (which keeps micros); re-exported so pricing code has one import.
export { MICROS, microsToUnits, unitsToMicros } from "../store/micros.js";

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
