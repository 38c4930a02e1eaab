import { Router, type Request, type Response } from "express";
import type { AppDeps } from "../../appDeps.js";
import { RateLimitError } from "../../errors.js";
import { parse } from "../../http/parse.js";
import { RateLimiter } from "../../limits/RateLimiter.js";
import { BillingUsageAnalyticsQuery, BillingUsageHistoryQuery, BillingUsageQuery } from "./schema.js";
import { BILLING_USAGE_DEPRECATION_HEADERS, BillingService, compactTimestamp, usageCsv } from "./service.js";

/** The brief: the deprecated billing usage endpoint allows 1 request per minute per account. */
const BILLING_USAGE_LIMIT = { rpm: 1 };

/** CSV when the Accept header names text/csv (with a non-zero q); JSON otherwise. */
export function wantsCsv(req: Request): boolean {
  return (req.get("accept") ?? "").split(",").some((part) => {
    const [type, ...params] = part.split(";").map((s) => s.trim().toLowerCase());
    if (type !== "text/csv") return false;
    const q = params.find((p) => p.startsWith("q="));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

function sendCsv(res: Response, body: string, filename: string): void {
  res.setHeader("Content-Type", "text/csv; charset=utf-8");
  res.setHeader("Content-Disposition", `attachment; filename=${filename}`);
  res.send(body);
}

const callerOf = (res: Response) => res.locals.ctx.auth!;

export type BillingRouterDeps = Pick<AppDeps, "db" | "credits" | "models" | "limits" | "now" | "authenticateKey">;

export function billingRouter(deps: BillingRouterDeps): Router {
  const service = new BillingService({ db: deps.db, credits: deps.credits, models: deps.models, now: deps.now });
  const usageLimiter = new RateLimiter(deps.now);
  const router = Router();

  router.get("/billing/balance", deps.authenticateKey, (_req, res) => {
    res.json(service.balance(callerOf(res).accountId));
  });

  router.get("/billing/usage", deps.authenticateKey, (req, res) => {
    const caller = callerOf(res);
    res.set(BILLING_USAGE_DEPRECATION_HEADERS);
    service.assertLegacyUsageAllowed(caller.accountId);
    const query = parse(BillingUsageQuery, req.query);
    const decision = usageLimiter.admit(`billing-usage:${caller.accountId}`, BILLING_USAGE_LIMIT);
    if (!decision.allowed) {
      deps.limits.log(caller.accountId, caller.apiKeyId, null, `${caller.rateLimitTier}:billing_usage`, "RPM");
      throw new RateLimitError(
        "Rate limit exceeded: GET /billing/usage allows 1 request per minute per account. Retry after x-ratelimit-reset-requests, or use GET /billing/usage-history.",
        { ...decision.headers, "x-ratelimit-type": "user" },
      );
    }
    res.set(decision.headers);
    const result = service.usage(caller.accountId, query);
    const { limit, page, total, totalPages } = result.pagination;
    res.set({
      "x-pagination-limit": String(limit),
      "x-pagination-page": String(page),
      "x-pagination-total": String(total),
      "x-pagination-total-pages": String(totalPages),
    });
    if (wantsCsv(req)) sendCsv(res, usageCsv(result.data), `billing-usage-${compactTimestamp(deps.now())}.csv`);
    else res.json(result);
  });

  router.get("/billing/usage-history", deps.authenticateKey, (req, res) => {
    const query = parse(BillingUsageHistoryQuery, req.query);
    const result = service.usageHistory(callerOf(res).accountId, query);
    if (result.nextCursor) res.setHeader("x-next-cursor", result.nextCursor);
    if (wantsCsv(req)) sendCsv(res, usageCsv(result.data), `billing-usage-history-${compactTimestamp(deps.now())}.csv`);
    else res.json(result);
  });

  router.get("/billing/usage-analytics", deps.authenticateKey, (req, res) => {
    res.json(service.analytics(callerOf(res).accountId, parse(BillingUsageAnalyticsQuery, req.query)));
  });

  return router;
}
