import { randomBytes } from "node:crypto";
import type { Currency } from "./ledger.js";
import { statement, type Db } from "./Store.js";

/**
 * Read queries behind the billing and keys endpoints and `hearth usage export`. Billing usage
 * entries are the ledger's `charge` rows (one per currency a priced line was paid from), with
 * the request's `usage` row joined on request_id for the inference details.
 */

/** One charge row of the ledger with its request's usage; amounts stay integer micros here. */
export interface UsageEntryRow {
  id: number;
  accountId: string;
  createdAt: number;
  sku: string | null;
  units: number | null;
  pricePerUnitUsd: number | null;
  /** What was charged, positive. */
  micros: number;
  currency: Currency;
  note: string | null;
  requestId: string | null;
  apiKeyId: string | null;
  model: string | null;
  /** Null when no usage row was recorded for the request. */
  durationMs: number | null;
  promptTokens: number | null;
  completionTokens: number | null;
  /** The end user the request named, and its labels as JSON text; null when not sent. */
  user: string | null;
  metadata: string | null;
}

export interface UsageFilter {
  /** Omitted: every account (the CLI export). */
  accountId?: string;
  /** `VCU` is the reference's legacy currency: nothing is charged in it, so it matches nothing. */
  currency?: Currency | "VCU";
  /** Inclusive lower bound on created_at (ms). */
  since?: number;
  /** Exclusive upper bound on created_at (ms). */
  until?: number;
}

const SELECT_ENTRY = `SELECT l.id, l.account_id AS accountId, l.created_at AS createdAt, l.sku, l.units, l.price_per_unit_usd AS pricePerUnitUsd,
    -l.delta_micros AS micros, l.currency, l.note, l.request_id AS requestId, l.api_key_id AS apiKeyId, l.model,
    u.duration_ms AS durationMs, u.prompt_tokens AS promptTokens, u.completion_tokens AS completionTokens, u.user, u.metadata
  FROM ledger l
  LEFT JOIN usage u ON u.id = (SELECT MIN(id) FROM usage WHERE request_id = l.request_id)`;

function where(filter: UsageFilter, extra: string[] = []): { sql: string; params: Record<string, unknown> } {
  const clauses = ["l.kind = 'charge'", ...extra];
  const params: Record<string, unknown> = {};
  if (filter.accountId !== undefined) {
    clauses.push("l.account_id = @accountId");
    params.accountId = filter.accountId;
  }
  if (filter.currency !== undefined) {
    clauses.push("l.currency = @currency");
    params.currency = filter.currency;
  }
  if (filter.since !== undefined) {
    clauses.push("l.created_at >= @since");
    params.since = filter.since;
  }
  if (filter.until !== undefined) {
    clauses.push("l.created_at < @until");
    params.until = filter.until;
  }
  return { sql: `WHERE ${clauses.join(" AND ")}`, params };
}

export function countUsageEntries(db: Db, filter: UsageFilter): number {
  const { sql, params } = where(filter);
  return statement(db, `SELECT COUNT(*) FROM ledger l ${sql}`).pluck().get(params) as number;
}

/** An offset page in creation order (ties broken by id), for the deprecated endpoint. */
export function pageUsageEntries(db: Db, filter: UsageFilter, page: { order: "asc" | "desc"; limit: number; offset: number }): UsageEntryRow[] {
  const { sql, params } = where(filter);
  const dir = page.order === "asc" ? "ASC" : "DESC";
  return statement(db, `${SELECT_ENTRY} ${sql} ORDER BY l.created_at ${dir}, l.id ${dir} LIMIT @limit OFFSET @offset`).all({
    ...params,
    limit: page.limit,
    offset: page.offset,
  }) as UsageEntryRow[];
}

/** The highest ledger id now: rows a walk started now can see are the ones at or below it. */
export function ledgerHighWater(db: Db): number {
  return (statement(db, "SELECT COALESCE(MAX(id), 0) FROM ledger").pluck().get() as number) ?? 0;
}

/**
 * One step of a keyset walk in ascending (created_at, id): rows after `after`, no newer than
 * the walk's high-water id. Ledger rows never change, so every row at or below the high-water
 * mark is visited exactly once whatever is inserted meanwhile.
 */
export function walkUsageEntries(db: Db, filter: UsageFilter, step: { after: { createdAt: number; id: number } | null; highWater: number; limit: number }): UsageEntryRow[] {
  const extra = ["l.id <= @highWater"];
  if (step.after) extra.push("(l.created_at > @afterCreatedAt OR (l.created_at = @afterCreatedAt AND l.id > @afterId))");
  const { sql, params } = where(filter, extra);
  return statement(db, `${SELECT_ENTRY} ${sql} ORDER BY l.created_at ASC, l.id ASC LIMIT @limit`).all({
    ...params,
    highWater: step.highWater,
    afterCreatedAt: step.after?.createdAt ?? 0,
    afterId: step.after?.id ?? 0,
    limit: step.limit,
  }) as UsageEntryRow[];
}

/** Every matching entry in ascending order, one row at a time (for exports of any size). */
export function iterateUsageEntries(db: Db, filter: UsageFilter): IterableIterator<UsageEntryRow> {
  const { sql, params } = where(filter);
  return db.prepare(`${SELECT_ENTRY} ${sql} ORDER BY l.created_at ASC, l.id ASC`).iterate(params) as IterableIterator<UsageEntryRow>;
}

/**
 * Charges of an account in [since, until) grouped by UTC day, model, key and sku. A priced
 * line paid partly in DIEM and partly in USD is two ledger rows carrying the line's units
 * each; units are counted once per request and sku.
 */
export interface UsageAggregateRow {
  day: number;
  model: string | null;
  apiKeyId: string | null;
  sku: string | null;
  usdMicros: number;
  diemMicros: number;
  units: number;
}

export function aggregateUsage(db: Db, accountId: string, since: number, until: number): UsageAggregateRow[] {
  return statement(
    db,
    `SELECT day, model, apiKeyId, sku, SUM(usdMicros) AS usdMicros, SUM(diemMicros) AS diemMicros, SUM(units) AS units
       FROM (
         SELECT MIN(created_at) - (MIN(created_at) % 86400000) AS day, MIN(model) AS model, MIN(api_key_id) AS apiKeyId, sku,
                SUM(CASE WHEN currency = 'DIEM' THEN 0 ELSE -delta_micros END) AS usdMicros,
                SUM(CASE WHEN currency = 'DIEM' THEN -delta_micros ELSE 0 END) AS diemMicros,
                COALESCE(MAX(units), 0) AS units
         FROM ledger
         WHERE account_id = @accountId AND kind = 'charge' AND created_at >= @since AND created_at < @until
         GROUP BY COALESCE(request_id, 'row:' || id), sku
       )
       GROUP BY day, model, apiKeyId, sku`,
  ).all({ accountId, since, until }) as UsageAggregateRow[];
}

/** What a key was charged since `since`, USD (bundled credits included) and DIEM, in micros. */
export function keySpendSince(db: Db, apiKeyId: string, since: number): { usd: number; diem: number } {
  return statement(
    db,
    `SELECT COALESCE(SUM(CASE WHEN currency = 'DIEM' THEN 0 ELSE -delta_micros END), 0) AS usd,
              COALESCE(SUM(CASE WHEN currency = 'DIEM' THEN -delta_micros ELSE 0 END), 0) AS diem
       FROM ledger WHERE api_key_id = ? AND kind = 'charge' AND created_at >= ?`,
  ).get(apiKeyId, since) as { usd: number; diem: number };
}

export interface RateLimitLogRow {
  apiKeyId: string | null;
  modelId: string | null;
  tier: string;
  limitType: string;
  createdAt: number;
}

/** The latest refusals of an account's keys, newest first (abuse blocks are logged by key only). */
export function recentRateLimitLog(db: Db, accountId: string, limit: number): RateLimitLogRow[] {
  return statement(
    db,
    `SELECT api_key_id AS apiKeyId, model_id AS modelId, tier, limit_type AS limitType, created_at AS createdAt
       FROM rate_limit_log
       WHERE account_id = @accountId OR (account_id IS NULL AND api_key_id IN (SELECT id FROM api_keys WHERE account_id = @accountId))
       ORDER BY created_at DESC, id DESC LIMIT @limit`,
  ).all({ accountId, limit }) as RateLimitLogRow[];
}

/** A random secret kept in node_settings under `name`, created on first use (stable across restarts). */
export function nodeSecret(db: Db, name: string, now: number): Buffer {
  statement(db, "INSERT OR IGNORE INTO node_settings (name, value, created_at) VALUES (?, ?, ?)").run(name, randomBytes(32).toString("base64"), now);
  return Buffer.from(statement(db, "SELECT value FROM node_settings WHERE name = ?").pluck().get(name) as string, "base64");
}
