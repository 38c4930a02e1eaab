import { z } from "zod";
import { DAY_MS } from "../../time.js";
import { parseIsoInstant } from "../../billing/parseIsoInstant.js";

/**
 * Billing endpoints (the reference's Billing tag): balance, the deprecated offset-paged usage,
 * its keyset-paged replacement usage-history, and usage analytics. Query strings arrive as
 * strings, so numbers are coerced; undocumented query parameters are ignored.
 */

/** `USD`, `DIEM`, `BUNDLED_CREDITS`, and the legacy `VCU` (accepted, matches nothing). */
export const BillingCurrency = z.enum(["USD", "VCU", "DIEM", "BUNDLED_CREDITS"]);
export type BillingCurrency = z.infer<typeof BillingCurrency>;

// The parser is billing/'s (the CLI's --since/--until use it too); re-exported for the schemas that import it from here.
export { parseIsoInstant };

const IsoInstant = z
  .string()
  .max(40)
  .transform((text, ctx) => {
    const parsed = parseIsoInstant(text);
    if (!parsed) {
      ctx.addIssue({ code: "custom", message: "expected an ISO 8601 date (YYYY-MM-DD) or date-time with a zone (e.g. 2026-07-01T00:00:00Z)" });
      return z.NEVER;
    }
    return parsed;
  });

const IntParam = (min: number, max?: number) => {
  const base = z.coerce.number().int().min(min);
  return max === undefined ? base : base.max(max);
};

// ---------------------------------------------------------------------------------------
// GET /billing/balance

export const BillingBalanceResponse = z.object({
  canConsume: z.boolean(),
  /** The currency the next charge draws on: DIEM, then bundled credits, then USD; null when nothing is left. */
  consumptionCurrency: z.enum(["USD", "VCU", "DIEM", "BUNDLED_CREDITS"]).nullable(),
  balances: z.object({
    /** Null when the account neither stakes nor holds DIEM. */
    diem: z.number().nullable(),
    /** USD with bundled credits counted as USD. */
    usd: z.number().nullable(),
  }),
  diemEpochAllocation: z.number(),
});
export type BillingBalanceResponse = z.infer<typeof BillingBalanceResponse>;

// ---------------------------------------------------------------------------------------
// Usage entries (shared by /billing/usage, /billing/usage-history and `hearth usage export`)

export const InferenceDetails = z.object({
  requestId: z.string(),
  inferenceExecutionTime: z.number().int().nullable(),
  promptTokens: z.number().int().nullable(),
  completionTokens: z.number().int().nullable(),
  /** The end user the chat or responses request named (`user`); absent when it named none. */
  user: z.string().optional(),
  /** The request's labels (`metadata`); absent when it sent none. */
  metadata: z.record(z.string(), z.string()).optional(),
});

export const UsageEntry = z.object({
  timestamp: z.string(),
  sku: z.string(),
  pricePerUnitUsd: z.number(),
  units: z.number(),
  /** Total charged, positive, in whole units of `currency`. */
  amount: z.number(),
  currency: z.enum(["USD", "DIEM", "BUNDLED_CREDITS"]),
  notes: z.string(),
  inferenceDetails: InferenceDetails.nullable(),
});
export type UsageEntry = z.infer<typeof UsageEntry>;

// ---------------------------------------------------------------------------------------
// GET /billing/usage (deprecated)

export const BillingUsageQuery = z
  .looseObject({
    currency: BillingCurrency.optional(),
    startDate: IsoInstant.optional(),
    endDate: IsoInstant.optional(),
    limit: IntParam(1, 500).default(200),
    page: IntParam(1).default(1),
    sortOrder: z.enum(["asc", "desc"]).default("desc"),
  })
  .transform((query, ctx) => {
    const since = query.startDate?.ms;
    // The end is inclusive: a date-only end takes in that whole day.
    const until = query.endDate ? query.endDate.ms + (query.endDate.dateOnly ? DAY_MS : 1) : undefined;
    if (since !== undefined && until !== undefined && until <= since) {
      ctx.addIssue({ code: "custom", path: ["endDate"], message: "endDate must not be before startDate" });
      return z.NEVER;
    }
    return { currency: query.currency, since, until, limit: query.limit, page: query.page, sortOrder: query.sortOrder };
  });
export type BillingUsageQuery = z.infer<typeof BillingUsageQuery>;

export const BillingUsageResponse = z.object({
  data: z.array(UsageEntry.extend({ unit: z.number() })),
  pagination: z.object({ limit: z.number().int(), page: z.number().int(), total: z.number().int(), totalPages: z.number().int() }),
  warningMessage: z.string(),
});
export type BillingUsageResponse = z.infer<typeof BillingUsageResponse>;

// ---------------------------------------------------------------------------------------
// GET /billing/usage-history

export const CURSOR_PATTERN = /^[A-Za-z0-9_-]+$/;
export const USAGE_HISTORY_DEFAULT_PAGE_SIZE = 1000;

export const BillingUsageHistoryQuery = z
  .looseObject({
    currency: BillingCurrency.optional(),
    cursor: z.string().min(1).max(512).regex(CURSOR_PATTERN, "cursor must be the nextCursor of a previous response").optional(),
    startTimestamp: IsoInstant.optional(),
    endTimestamp: IsoInstant.optional(),
    pageSize: IntParam(10, 1000).optional(),
  })
  .superRefine((query, ctx) => {
    if (query.cursor !== undefined) {
      for (const name of ["currency", "startTimestamp", "endTimestamp", "pageSize"] as const) {
        if (query[name] !== undefined) {
          ctx.addIssue({ code: "custom", path: [name], message: `${name} cannot be sent with a cursor: the cursor carries the filters of the walk it continues` });
        }
      }
    }
    if (query.startTimestamp && query.endTimestamp && query.endTimestamp.ms <= query.startTimestamp.ms) {
      ctx.addIssue({ code: "custom", path: ["endTimestamp"], message: "endTimestamp must be later than startTimestamp" });
    }
  });
export type BillingUsageHistoryQuery = z.infer<typeof BillingUsageHistoryQuery>;

export const BillingUsageHistoryResponse = z.object({
  data: z.array(UsageEntry),
  /** Null when this is the last page of the walk. */
  nextCursor: z.string().regex(CURSOR_PATTERN).max(512).nullable(),
});
export type BillingUsageHistoryResponse = z.infer<typeof BillingUsageHistoryResponse>;

/** What a usage-history cursor carries (signed; see BillingService). */
export const UsageHistoryCursor = z.strictObject({
  v: z.literal(1),
  /** Account the walk belongs to. */
  a: z.string(),
  /** Filters: currency, end (exclusive, ms), page size. */
  c: BillingCurrency.nullable(),
  e: z.number().int().nullable(),
  s: z.number().int().min(10).max(1000),
  /** Highest ledger id when the walk started: later rows are not part of it. */
  h: z.number().int().nonnegative(),
  /** Position: created_at and id of the last entry returned. */
  t: z.number().int(),
  i: z.number().int(),
  /** Issued at (ms), for expiry. */
  x: z.number().int(),
});
export type UsageHistoryCursor = z.infer<typeof UsageHistoryCursor>;

// ---------------------------------------------------------------------------------------
// GET /billing/usage-analytics

export const MAX_ANALYTICS_DAYS = 90;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

export const BillingUsageAnalyticsQuery = z
  .looseObject({
    lookback: z
      .string()
      .regex(/^[1-9]\d*d$/, 'lookback is a number of days followed by "d", e.g. 7d')
      .refine((v) => Number.parseInt(v, 10) <= MAX_ANALYTICS_DAYS, `lookback is at most ${MAX_ANALYTICS_DAYS}d`)
      .optional(),
    startDate: z
      .string()
      .regex(DATE, "expected YYYY-MM-DD")
      .refine((v) => parseIsoInstant(v) !== undefined, "not a calendar date")
      .optional(),
    endDate: z
      .string()
      .regex(DATE, "expected YYYY-MM-DD")
      .refine((v) => parseIsoInstant(v) !== undefined, "not a calendar date")
      .optional(),
  })
  .superRefine((query, ctx) => {
    if ((query.startDate === undefined) !== (query.endDate === undefined)) {
      ctx.addIssue({ code: "custom", path: [query.startDate === undefined ? "startDate" : "endDate"], message: "startDate and endDate go together" });
      return;
    }
    if (query.startDate !== undefined && query.lookback !== undefined) {
      ctx.addIssue({ code: "custom", path: ["lookback"], message: "send either lookback or startDate and endDate, not both" });
      return;
    }
    if (query.startDate !== undefined && query.endDate !== undefined) {
      const days = (Date.parse(query.endDate) - Date.parse(query.startDate)) / DAY_MS + 1;
      if (days < 1) ctx.addIssue({ code: "custom", path: ["endDate"], message: "endDate must not be before startDate" });
      else if (days > MAX_ANALYTICS_DAYS) ctx.addIssue({ code: "custom", path: ["endDate"], message: `the range is at most ${MAX_ANALYTICS_DAYS} days` });
    }
  });
export type BillingUsageAnalyticsQuery = z.infer<typeof BillingUsageAnalyticsQuery>;

const Totals = { totalUsd: z.number(), totalDiem: z.number(), totalUnits: z.number() };
const DailyChart = z.array(z.record(z.string(), z.number()));

export const BillingUsageAnalyticsResponse = z.object({
  lookback: z.string(),
  byDate: z.array(z.object({ date: z.string(), USD: z.number(), DIEM: z.number() })),
  byModel: z.array(
    z.object({
      modelName: z.string(),
      unitType: z.string(),
      modelType: z.string().nullable(),
      ...Totals,
      breakdown: z.array(z.object({ type: z.string(), usd: z.number(), diem: z.number(), units: z.number() })).optional(),
    }),
  ),
  byModelDaily: DailyChart,
  topModels: z.array(z.string()),
  byKey: z.array(z.object({ apiKeyId: z.string().nullable(), description: z.string(), ...Totals })),
  byKeyDaily: DailyChart,
  topKeyNames: z.array(z.string()),
});
export type BillingUsageAnalyticsResponse = z.infer<typeof BillingUsageAnalyticsResponse>;
