/**
 * Money is integer micro-units (1e-6 USD or DIEM) from pricing to the ledger; floats appear
 * only at the API edge, where amounts are shown in whole units. A leaf module here, not in
 * billing/: the store converts amounts too, and the store must not depend on billing.
 */
export const MICROS = 1_000_000;

export const microsToUnits = (micros: number) => micros / MICROS;

/** Parses a non-negative decimal amount of whole units into micros, exactly (no float rounding drift). */
export function unitsToMicros(amount: number): number {
  if (!Number.isFinite(amount) || amount < 0) throw new RangeError(`not a valid amount: ${amount}`);
  return Math.round(amount * MICROS);
}
