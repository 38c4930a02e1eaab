import { unitsToMicros } from "./micros.js";
import { statement, type Db } from "./Store.js";
import { DAY_MS } from "../time.js";

/** Whole units (USD or DIEM) to integer micros. */
export const toMicros = unitsToMicros;

/**
 * Low-level balance and ledger statements. Every balance change goes through applyEntry,
 * which writes the append-only ledger row and the balance in the caller's transaction.
 * Rules (spend order, holds, limits) live in billing/credits.ts.
 */

export type Currency = "USD" | "DIEM" | "BUNDLED_CREDITS";
export const CURRENCIES: readonly Currency[] = ["USD", "DIEM", "BUNDLED_CREDITS"];

/** topup: an x402 payment credited; topup_reversal: a deferred payment whose transfer failed, taken back; refund: a failed job given back. */
export type LedgerKind = "grant" | "charge" | "refund" | "diem_allocation" | "diem_expiry" | "topup" | "topup_reversal";

export interface LedgerEntry {
  accountId: string;
  currency: Currency;
  deltaMicros: number;
  kind: LedgerKind;
  requestId?: string | null;
  apiKeyId?: string | null;
  note?: string | null;
  sku?: string | null;
  units?: number | null;
  pricePerUnitUsd?: number | null;
  model?: string | null;
  /** Grants: who granted (an operator key's id, or "cli"). */
  grantedBy?: string | null;
  createdAt: number;
}

/** Must run inside a transaction. The balance CHECK (>= 0) makes an overdraft abort it. */
export function applyEntry(db: Db, entry: LedgerEntry): void {
  if (!Number.isSafeInteger(entry.deltaMicros)) throw new RangeError(`ledger amounts are whole micros, got ${entry.deltaMicros}`);
  // UPDATE first: an upsert would check the CHECK constraint against the would-be new row.
  const updated = statement(db, "UPDATE balances SET amount_micros = amount_micros + ? WHERE account_id = ? AND currency = ?").run(
    entry.deltaMicros,
    entry.accountId,
    entry.currency,
  ).changes;
  if (updated === 0) statement(db, "INSERT INTO balances (account_id, currency, amount_micros) VALUES (?, ?, ?)").run(entry.accountId, entry.currency, entry.deltaMicros);
  statement(
    db,
    `INSERT INTO ledger (account_id, currency, delta_micros, kind, request_id, api_key_id, note, sku, units, price_per_unit_usd, model, granted_by, created_at)
     VALUES (@accountId, @currency, @deltaMicros, @kind, @requestId, @apiKeyId, @note, @sku, @units, @pricePerUnitUsd, @model, @grantedBy, @createdAt)`,
  ).run({ requestId: null, apiKeyId: null, note: null, sku: null, units: null, pricePerUnitUsd: null, model: null, grantedBy: null, ...entry });
}

/** Adds credit: the balance and its ledger row change in one transaction. */
export function grantCredits(
  db: Db,
  accountId: string,
  currency: Currency,
  micros: number,
  note: string,
  now = Date.now(),
  kind: "grant" | "topup" = "grant",
  grantedBy: string | null = null,
): void {
  if (!Number.isSafeInteger(micros) || micros <= 0) throw new RangeError(`a grant is a positive whole number of micros, got ${micros}`);
  db.transaction(() => applyEntry(db, { accountId, currency, deltaMicros: micros, kind, note, grantedBy, createdAt: now })).immediate();
}

export function getBalances(db: Db, accountId: string): Record<Currency, number> {
  const balances: Record<Currency, number> = { USD: 0, DIEM: 0, BUNDLED_CREDITS: 0 };
  const rows = statement(db, "SELECT currency, amount_micros AS micros FROM balances WHERE account_id = ?").all(accountId) as { currency: Currency; micros: number }[];
  for (const row of rows) balances[row.currency] = row.micros;
  return balances;
}

/** Sum of ledger deltas per currency: must always equal the balances. */
export function ledgerTotals(db: Db, accountId: string): Record<Currency, number> {
  const totals: Record<Currency, number> = { USD: 0, DIEM: 0, BUNDLED_CREDITS: 0 };
  const rows = statement(db, "SELECT currency, SUM(delta_micros) AS micros FROM ledger WHERE account_id = ? GROUP BY currency").all(accountId) as {
    currency: Currency;
    micros: number;
  }[];
  for (const row of rows) totals[row.currency] = row.micros;
  return totals;
}

/** One charge row of a request, as a refund reverses it. */
export interface ChargeRow {
  accountId: string;
  currency: Currency;
  deltaMicros: number;
  apiKeyId: string | null;
  sku: string | null;
  units: number | null;
  pricePerUnitUsd: number | null;
  model: string | null;
}

export function chargesOfRequest(db: Db, requestId: string): ChargeRow[] {
  return statement(
    db,
    `SELECT account_id AS accountId, currency, delta_micros AS deltaMicros, api_key_id AS apiKeyId, sku, units,
         price_per_unit_usd AS pricePerUnitUsd, model
       FROM ledger WHERE request_id = ? AND kind = 'charge'`,
  ).all(requestId) as ChargeRow[];
}

/** What a key spent since `since`, charges less refunds: USD (bundled credits included) and DIEM, in micros. */
export function keyNetSpendSince(db: Db, apiKeyId: string, since: number): { usd: number; diem: number } {
  return statement(
    db,
    `SELECT COALESCE(SUM(CASE WHEN currency = 'DIEM' THEN 0 ELSE -delta_micros END), 0) AS usd,
              COALESCE(SUM(CASE WHEN currency = 'DIEM' THEN -delta_micros ELSE 0 END), 0) AS diem
       FROM ledger WHERE api_key_id = ? AND kind IN ('charge', 'refund') AND created_at >= ?`,
  ).get(apiKeyId, since) as { usd: number; diem: number };
}

/** Credits of `sku` charged to an account since `since`, one count per request (a request's cost lines share its units). */
export function creditsChargedSince(db: Db, accountId: string, sku: string, since: number): number {
  return statement(
    db,
    `SELECT COALESCE(SUM(units), 0) FROM (
         SELECT MAX(units) AS units FROM ledger
         WHERE account_id = ? AND kind = 'charge' AND sku = ? AND created_at >= ?
         GROUP BY request_id)`,
  )
    .pluck()
    .get(accountId, sku, since) as number;
}

/** A USD ledger entry of a wallet's history: a request's charges summed into one, other rows as they are. */
export interface UsdHistoryEntry {
  /** The last ledger row id of the entry. */
  id: number;
  kind: LedgerKind;
  deltaMicros: number;
  createdAt: number;
  requestId: string | null;
  model: string | null;
  /** The USD (bundled credits included) balance after this entry. */
  balanceAfterMicros: number;
}

/** An account's USD and bundled-credit ledger, newest first, with the running balance after each entry. */
export function usdHistory(db: Db, accountId: string, limit: number, offset: number): UsdHistoryEntry[] {
  return statement(
    db,
    `WITH entries AS (
         SELECT MAX(id) AS id, MIN(kind) AS kind, SUM(delta_micros) AS delta, MAX(created_at) AS created_at, request_id, MAX(model) AS model
         FROM ledger
         WHERE account_id = ? AND currency IN ('USD', 'BUNDLED_CREDITS')
         GROUP BY CASE WHEN kind = 'charge' AND request_id IS NOT NULL THEN 'r:' || request_id ELSE 'i:' || id END
       )
       SELECT id, kind, delta AS deltaMicros, created_at AS createdAt, request_id AS requestId, model, SUM(delta) OVER (ORDER BY id) AS balanceAfterMicros
       FROM entries ORDER BY id DESC LIMIT ? OFFSET ?`,
  ).all(accountId, limit, offset) as UsdHistoryEntry[];
}

// DAY_MS goes into the SQL as a literal, not a parameter: a bound JS number is a REAL, and the day must be an integer division.
/** Node-wide spend (charges less refunds) per UTC day and model since `since`, in micros; a null model is reported as `noModel`. */
export function dailySpendByModel(db: Db, since: number, noModel: string): { day: number; model: string; usd: number; diem: number }[] {
  return statement(
    db,
    `SELECT (created_at / ${DAY_MS}) * ${DAY_MS} AS day, COALESCE(model, @noModel) AS model,
         -SUM(CASE WHEN currency = 'DIEM' THEN 0 ELSE delta_micros END) AS usd, -SUM(CASE WHEN currency = 'DIEM' THEN delta_micros ELSE 0 END) AS diem
       FROM ledger WHERE kind IN ('charge', 'refund') AND created_at >= @since GROUP BY day, model`,
  ).all({ noModel, since }) as { day: number; model: string; usd: number; diem: number }[];
}

/** A stored ledger row, every column. */
export interface LedgerRow extends Required<LedgerEntry> {
  id: number;
}

export interface LedgerFilter {
  accountId?: string;
  apiKeyId?: string;
  requestId?: string;
  kind?: LedgerKind;
}

/** Ledger rows matching every given field, oldest first (the operator's audit view, and tests' checks). */
export function listLedgerEntries(db: Db, filter: LedgerFilter = {}): LedgerRow[] {
  const columns: Record<keyof LedgerFilter, string> = { accountId: "account_id", apiKeyId: "api_key_id", requestId: "request_id", kind: "kind" };
  const given = (Object.keys(columns) as (keyof LedgerFilter)[]).filter((name) => filter[name] !== undefined);
  const where = given.length ? `WHERE ${given.map((name) => `${columns[name]} = @${name}`).join(" AND ")}` : "";
  return statement(
    db,
    `SELECT id, account_id AS accountId, currency, delta_micros AS deltaMicros, kind, request_id AS requestId, api_key_id AS apiKeyId, note, sku,
         units, price_per_unit_usd AS pricePerUnitUsd, model, granted_by AS grantedBy, created_at AS createdAt
       FROM ledger ${where} ORDER BY id`,
  ).all(Object.fromEntries(given.map((name) => [name, filter[name]]))) as LedgerRow[];
}
