import { createHmac, timingSafeEqual } from "node:crypto";
import { toBalanceResponse } from "../../billing/balanceReport.js";
import type { Credits } from "../../billing/credits.js";
import { microsToUnits } from "../../billing/money.js";
import { toUsageEntry } from "../../billing/usageReport.js";
import type { ModelEntry } from "../../config/modelRegistry.js";
import { ApiError, InvalidRequestError } from "../../errors.js";
import type { ModelManager } from "../../models/ModelManager.js";
import { getAccount } from "../../store/accounts.js";
import { getApiKey } from "../../store/apiKeys.js";
import type { Db } from "../../store/Store.js";
import { inReadTransaction } from "../../store/transaction.js";
import { aggregateUsage, countUsageEntries, ledgerHighWater, nodeSecret, pageUsageEntries, walkUsageEntries, type UsageAggregateRow } from "../../store/usageEntries.js";
import {
  UsageHistoryCursor,
  USAGE_HISTORY_DEFAULT_PAGE_SIZE,
  type BillingBalanceResponse,
  type BillingUsageAnalyticsQuery,
  type BillingUsageAnalyticsResponse,
  type BillingUsageHistoryQuery,
  type BillingUsageHistoryResponse,
  type BillingUsageQuery,
  type BillingUsageResponse,
} from "./schema.js";
import { DAY_MS } from "../../time.js";

// The balance record and the usage entries' JSON and CSV forms are billing/'s (the CLI prints them too).
export { compactTimestamp, usageCsv } from "../../billing/usageReport.js";

// ---------------------------------------------------------------------------------------
// The deprecated endpoint

/** Accounts created on or after this instant get 410 from GET /billing/usage (API brief). */
export const BILLING_USAGE_CUTOFF = Date.UTC(2026, 6, 7);
export const BILLING_USAGE_SUCCESSOR = "/api/v1/billing/usage-history";
export const BILLING_USAGE_DEPRECATION_HEADERS = Object.freeze({
  // RFC 9745: the date the endpoint was deprecated, as @epoch-seconds.
  Deprecation: `@${BILLING_USAGE_CUTOFF / 1000}`,
  Link: `<${BILLING_USAGE_SUCCESSOR}>; rel="successor-version"`,
});
const MIGRATION_HINT = "replace page and limit with pageSize and the nextCursor of each response, and startDate and endDate with startTimestamp and endTimestamp";
export const BILLING_USAGE_WARNING = `GET /api/v1/billing/usage is deprecated and will be removed. Use GET ${BILLING_USAGE_SUCCESSOR}: ${MIGRATION_HINT}.`;

export class BillingUsageGoneError extends ApiError {
  constructor() {
    super(410, `GET /api/v1/billing/usage is not available to accounts created on or after 2026-07-07. Use GET ${BILLING_USAGE_SUCCESSOR} instead: ${MIGRATION_HINT}.`, {
      // RFC 8594: for these accounts the endpoint was retired at the cutoff.
      headers: { ...BILLING_USAGE_DEPRECATION_HEADERS, Sunset: new Date(BILLING_USAGE_CUTOFF).toUTCString() },
    });
  }
}

// ---------------------------------------------------------------------------------------

/** Cursors older than this are refused (the walk restarts from the first page). */
export const CURSOR_TTL_MS = 24 * 3_600_000;
const CURSOR_MAC_BYTES = 32;

export interface BillingServiceOptions {
  db: Db;
  credits: Credits;
  models: ModelManager;
  now: () => number;
}

/** Balance, usage entries and analytics of one account. Knows nothing about Express. */
export class BillingService {
  private secret: Buffer | undefined;

  constructor(private readonly options: BillingServiceOptions) {}

  balance(accountId: string): BillingBalanceResponse {
    return toBalanceResponse(this.options.credits.snapshot(accountId));
  }

  /** Throws 410 for accounts too new for the deprecated endpoint. */
  assertLegacyUsageAllowed(accountId: string): void {
    const account = getAccount(this.options.db, accountId);
    if (!account || account.createdAt >= BILLING_USAGE_CUTOFF) throw new BillingUsageGoneError();
  }

  usage(accountId: string, query: BillingUsageQuery): BillingUsageResponse {
    const { db } = this.options;
    const filter = { accountId, currency: query.currency, since: query.since, until: query.until };
    return inReadTransaction(db, () => {
      const total = countUsageEntries(db, filter);
      const rows = pageUsageEntries(db, filter, { order: query.sortOrder, limit: query.limit, offset: (query.page - 1) * query.limit });
      return {
        data: rows.map((row) => {
          const entry = toUsageEntry(row);
          // `unit` is the brief's spelling of `units`; both are sent.
          return {
            timestamp: entry.timestamp,
            sku: entry.sku,
            pricePerUnitUsd: entry.pricePerUnitUsd,
            units: entry.units,
            unit: entry.units,
            amount: entry.amount,
            currency: entry.currency,
            notes: entry.notes,
            inferenceDetails: entry.inferenceDetails,
          };
        }),
        pagination: { limit: query.limit, page: query.page, total, totalPages: Math.ceil(total / query.limit) },
        warningMessage: BILLING_USAGE_WARNING,
      };
    });
  }

  /**
   * One page of the keyset walk in ascending (timestamp, id). The first page fixes the walk:
   * its filters and the ledger's high-water id go into the signed cursor, so later pages see
   * exactly the rows that existed when the walk began, each once.
   */
  usageHistory(accountId: string, query: BillingUsageHistoryQuery): BillingUsageHistoryResponse {
    const { db } = this.options;
    return inReadTransaction(db, () => {
      let walk: UsageHistoryCursor;
      let since: number | undefined;
      if (query.cursor !== undefined) {
        walk = this.readCursor(query.cursor, accountId);
      } else {
        since = query.startTimestamp?.ms;
        walk = {
          v: 1,
          a: accountId,
          c: query.currency ?? null,
          e: query.endTimestamp?.ms ?? null,
          s: query.pageSize ?? USAGE_HISTORY_DEFAULT_PAGE_SIZE,
          h: ledgerHighWater(db),
          t: 0,
          i: 0,
          x: this.options.now(),
        };
      }
      const filter = { accountId, currency: walk.c ?? undefined, since, until: walk.e ?? undefined };
      const after = query.cursor !== undefined ? { createdAt: walk.t, id: walk.i } : null;
      const rows = walkUsageEntries(db, filter, { after, highWater: walk.h, limit: walk.s + 1 });
      const page = rows.slice(0, walk.s);
      const last = page.at(-1);
      const nextCursor = rows.length > walk.s && last ? this.writeCursor({ ...walk, t: last.createdAt, i: last.id, x: this.options.now() }) : null;
      return { data: page.map(toUsageEntry), nextCursor };
    });
  }

  analytics(accountId: string, query: BillingUsageAnalyticsQuery): BillingUsageAnalyticsResponse {
    let since: number;
    let until: number;
    let lookback: string;
    if (query.startDate !== undefined && query.endDate !== undefined) {
      since = Date.parse(query.startDate);
      until = Date.parse(query.endDate) + DAY_MS;
      lookback = `${query.startDate}:${query.endDate}`;
    } else {
      lookback = query.lookback ?? "7d";
      const today = utcDay(this.options.now());
      since = today - (Number.parseInt(lookback, 10) - 1) * DAY_MS;
      until = today + DAY_MS;
    }
    return buildAnalytics(aggregateUsage(this.options.db, accountId, since, until), {
      lookback,
      since,
      until,
      modelOf: (id) => this.options.models.list().find((m) => m.id === id),
      keyDescription: (id) => getApiKey(this.options.db, id)?.description,
    });
  }

  // Cursor: base64url(JSON payload || HMAC-SHA256(node secret, payload)). The payload is
  // readable but not forgeable; the account inside it must be the caller's.

  private writeCursor(cursor: UsageHistoryCursor): string {
    const payload = Buffer.from(JSON.stringify(cursor), "utf8");
    return Buffer.concat([payload, this.mac(payload)]).toString("base64url");
  }

  private readCursor(text: string, accountId: string): UsageHistoryCursor {
    const rejected = (why: string) => InvalidRequestError.forField(["cursor"], `${why}; restart the walk from the first page (without a cursor)`);
    const bytes = Buffer.from(text, "base64url");
    if (bytes.length <= CURSOR_MAC_BYTES) throw rejected("the cursor is not one this server issued");
    const payload = bytes.subarray(0, bytes.length - CURSOR_MAC_BYTES);
    const mac = bytes.subarray(bytes.length - CURSOR_MAC_BYTES);
    if (!timingSafeEqual(mac, this.mac(payload))) throw rejected("the cursor is not one this server issued (it was altered or truncated)");
    let cursor: UsageHistoryCursor;
    try {
      cursor = UsageHistoryCursor.parse(JSON.parse(payload.toString("utf8")));
    } catch {
      throw rejected("the cursor is not one this server issued");
    }
    if (cursor.a !== accountId) throw rejected("the cursor was issued to another account");
    if (this.options.now() - cursor.x > CURSOR_TTL_MS) throw rejected("the cursor has expired (cursors live 24 hours)");
    return cursor;
  }

  private mac(payload: Buffer): Buffer {
    this.secret ??= nodeSecret(this.options.db, "usage_cursor_hmac", this.options.now());
    return createHmac("sha256", this.secret).update("usage-history-cursor\u0000").update(payload).digest();
  }
}

// ---------------------------------------------------------------------------------------
// Analytics

const utcDay = (ms: number) => ms - (((ms % DAY_MS) + DAY_MS) % DAY_MS);
const isoDate = (ms: number) => new Date(ms).toISOString().slice(0, 10);
/** Charts and ranking add DIEM to USD: one DIEM buys one USD of inference. */
const spend = (t: { usd: number; diem: number }) => t.usd + t.diem;
const TOP = 8;

const MODEL_TYPES: Partial<Record<ModelEntry["type"], string>> = {
  text: "LLM",
  embedding: "EMBEDDING",
  image: "IMAGE",
  upscale: "IMAGE",
  inpaint: "IMAGE",
  tts: "TTS",
  asr: "ASR",
  video: "VIDEO",
  music: "MUSIC",
};

/** Token SKUs are priced per million tokens; analytics report tokens. */
function unitsOf(sku: string | null, units: number): { unitType: string; units: number } {
  if (sku?.endsWith("-mtoken")) return { unitType: "tokens", units: Math.round(units * 1_000_000) };
  return { unitType: "units", units };
}

const BREAKDOWN_TYPES: [RegExp, string][] = [
  [/-llm-cache-input-mtoken$/, "Cache Read"],
  [/-llm-cache-write-mtoken$/, "Cache Write"],
  [/-llm-input-mtoken$/, "Input"],
  [/-llm-output-mtoken$/, "Output"],
];
const breakdownType = (sku: string | null) => BREAKDOWN_TYPES.find(([pattern]) => sku && pattern.test(sku))?.[1] ?? sku ?? "Other";

interface Bucket {
  usd: number;
  diem: number;
  units: number;
}
const emptyBucket = (): Bucket => ({ usd: 0, diem: 0, units: 0 });
function add(bucket: Bucket, row: UsageAggregateRow, units: number): void {
  bucket.usd += row.usdMicros;
  bucket.diem += row.diemMicros;
  bucket.units += units;
}
function bucketIn<K>(map: Map<K, Bucket>, key: K): Bucket {
  let bucket = map.get(key);
  if (!bucket) map.set(key, (bucket = emptyBucket()));
  return bucket;
}

/** Display labels made unique (two keys may share a description): repeats get their id appended. */
function uniqueLabels(groups: { id: string; label: string }[], suffix: (id: string) => string): Map<string, string> {
  const counts = new Map<string, number>();
  for (const g of groups) counts.set(g.label, (counts.get(g.label) ?? 0) + 1);
  return new Map(groups.map((g) => [g.id, counts.get(g.label)! > 1 ? `${g.label} (${suffix(g.id)})` : g.label]));
}

function buildAnalytics(
  rows: UsageAggregateRow[],
  context: {
    lookback: string;
    since: number;
    until: number;
    modelOf: (id: string) => ModelEntry | undefined;
    keyDescription: (id: string) => string | undefined;
  },
): BillingUsageAnalyticsResponse {
  const days: number[] = [];
  for (let day = context.since; day < context.until; day += DAY_MS) days.push(day);

  const byDay = new Map<number, Bucket>();
  const models = new Map<string, { total: Bucket; unitTypes: Set<string>; breakdown: Map<string, Bucket>; daily: Map<number, Bucket> }>();
  const keys = new Map<string, { total: Bucket; daily: Map<number, Bucket> }>();
  const NO_KEY = "\u0000none";

  for (const row of rows) {
    const { unitType, units } = unitsOf(row.sku, row.units);
    add(bucketIn(byDay, row.day), row, units);
    const modelId = row.model ?? "unknown";
    let model = models.get(modelId);
    if (!model) models.set(modelId, (model = { total: emptyBucket(), unitTypes: new Set(), breakdown: new Map(), daily: new Map() }));
    model.unitTypes.add(unitType);
    add(model.total, row, units);
    add(bucketIn(model.breakdown, breakdownType(row.sku)), row, units);
    add(bucketIn(model.daily, row.day), row, units);
    const keyId = row.apiKeyId ?? NO_KEY;
    let key = keys.get(keyId);
    if (!key) keys.set(keyId, (key = { total: emptyBucket(), daily: new Map() }));
    add(key.total, row, units);
    add(bucketIn(key.daily, row.day), row, units);
  }

  const toUnits = microsToUnits;
  const bySpend = <T extends { total: Bucket }>(a: [string, T], b: [string, T]) => spend(b[1].total) - spend(a[1].total) || a[0].localeCompare(b[0]);
  const modelList = [...models.entries()].sort(bySpend);
  const keyList = [...keys.entries()].sort(bySpend);
  const modelLabels = uniqueLabels(
    modelList.map(([id]) => ({ id, label: context.modelOf(id)?.name ?? id })),
    (id) => id,
  );
  const keyLabels = uniqueLabels(
    keyList.map(([id]) => ({ id, label: id === NO_KEY ? "No API key" : (context.keyDescription(id) ?? id) })),
    (id) => (id === NO_KEY ? "none" : id),
  );

  const daily = (list: [string, { daily: Map<number, Bucket> }][], labels: Map<string, string>) =>
    days.map((day) => {
      const point: Record<string, number> = { date: day };
      for (const [id, group] of list.slice(0, TOP)) {
        const bucket = group.daily.get(day);
        point[labels.get(id)!] = bucket ? toUnits(spend(bucket)) : 0;
      }
      return point;
    });

  return {
    lookback: context.lookback,
    byDate: [...days].reverse().map((day) => {
      const bucket = byDay.get(day) ?? emptyBucket();
      return { date: isoDate(day), USD: toUnits(bucket.usd), DIEM: toUnits(bucket.diem) };
    }),
    byModel: modelList.map(([id, model]) => {
      const entry = context.modelOf(id);
      const breakdown = [...model.breakdown.entries()]
        .sort(([a, x], [b, y]) => spend(y) - spend(x) || a.localeCompare(b))
        .map(([type, b]) => ({ type, usd: toUnits(b.usd), diem: toUnits(b.diem), units: b.units }));
      return {
        modelName: modelLabels.get(id)!,
        unitType: model.unitTypes.size === 1 ? [...model.unitTypes][0]! : "mixed",
        modelType: entry ? (MODEL_TYPES[entry.type] ?? null) : null,
        totalUsd: toUnits(model.total.usd),
        totalDiem: toUnits(model.total.diem),
        totalUnits: model.total.units,
        ...(breakdown.length > 1 ? { breakdown } : {}),
      };
    }),
    byModelDaily: daily(modelList, modelLabels),
    topModels: modelList.slice(0, TOP).map(([id]) => modelLabels.get(id)!),
    byKey: keyList.map(([id, key]) => ({
      apiKeyId: id === NO_KEY ? null : id,
      description: keyLabels.get(id)!,
      totalUsd: toUnits(key.total.usd),
      totalDiem: toUnits(key.total.diem),
      totalUnits: key.total.units,
    })),
    byKeyDaily: daily(keyList, keyLabels),
    topKeyNames: keyList.slice(0, TOP).map(([id]) => keyLabels.get(id)!),
  };
}
