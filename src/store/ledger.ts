import type { Db } from "./Store.js";

export type Currency = "USD" | "DIEM" | "BUNDLED_CREDITS";

/** 1 USD = 1_000_000 micros. Amounts never travel as floats past the API edge. */
export const MICROS_PER_UNIT = 1_000_000;

export function toMicros(amount: number): number {
  if (!Number.isFinite(amount) || amount < 0) throw new RangeError(`not a valid amount: ${amount}`);
  return Math.round(amount * MICROS_PER_UNIT);
}

/** Adds credit to an account: the balance and its ledger row change in one transaction. */
export function grantCredits(db: Db, accountId: string, currency: Currency, micros: number, note: string, now = Date.now()): void {
  if (!Number.isSafeInteger(micros) || micros <= 0) throw new RangeError(`grant must be a positive whole number of micros, got ${micros}`);
  db.transaction(() => {
    db.prepare(
      `INSERT INTO balances (account_id, currency, amount_micros) VALUES (?, ?, ?)
       ON CONFLICT (account_id, currency) DO UPDATE SET amount_micros = amount_micros + excluded.amount_micros`,
    ).run(accountId, currency, micros);
    db.prepare("INSERT INTO ledger (account_id, currency, delta_micros, kind, note, created_at) VALUES (?, ?, ?, 'grant', ?, ?)").run(
      accountId,
      currency,
      micros,
      note,
      now,
    );
  })();
}

export function getBalances(db: Db, accountId: string): Record<Currency, number> {
  const balances: Record<Currency, number> = { USD: 0, DIEM: 0, BUNDLED_CREDITS: 0 };
  for (const row of db.prepare("SELECT currency, amount_micros AS micros FROM balances WHERE account_id = ?").all(accountId) as {
    currency: Currency;
    micros: number;
  }[])
    balances[row.currency] = row.micros;
  return balances;
}
