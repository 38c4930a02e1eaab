import type { Cost } from "./credits.js";

/**
 * What a request was charged, as the response headers every paid response carries (JSON
 * bodies also have a `cost` field). Six decimals: the ledger counts micro-units.
 */
export function costHeaders(cost: Cost): Record<string, string> {
  return { "x-service-cost-usd": cost.usd.toFixed(6), "x-service-cost-diem": cost.diem.toFixed(6) };
}
