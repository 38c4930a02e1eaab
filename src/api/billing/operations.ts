import { defineApiGroup, text } from "../openapi/Operation.js";
import * as schemas from "./schema.js";

/** The account window's headers (every endpoint that runs no model answers them; docs/billing.md). */
export const ACCOUNT_RATE_LIMIT_HEADERS = {
  "x-ratelimit-limit-requests": "Requests allowed per minute to the account endpoints (300, 600 for partner keys)",
  "x-ratelimit-remaining-requests": "Requests left in this minute",
  "x-ratelimit-reset-requests": "When the window resets (Unix seconds)",
} as const;

const csv = { "text/csv": text("The same entries as CSV (send `Accept: text/csv`)") };

export const billingApi = defineApiGroup({
  tag: "Billing",
  description: "Balances and the usage ledger of the caller's account.",
  schemas,
  operations: [
    {
      method: "get",
      path: "/billing/balance",
      operationId: "getBillingBalance",
      summary: "Get the account balance",
      access: "apiKey",
      responses: {
        200: { description: "Balances and what the next charge draws on", headers: ACCOUNT_RATE_LIMIT_HEADERS, content: { "application/json": schemas.BillingBalanceResponse } },
      },
    },
    {
      method: "get",
      path: "/billing/usage",
      operationId: "getBillingUsage",
      summary: "Usage, offset-paged (deprecated)",
      description: "Deprecated: use /billing/usage-history. Only for accounts created before the cutoff (410 otherwise); 1 request per minute per account.",
      deprecated: true,
      access: "apiKey",
      query: schemas.BillingUsageQuery,
      responses: {
        200: {
          description: "A page of usage entries",
          headers: {
            Deprecation: "RFC 9745 deprecation date",
            Link: "The successor endpoint",
            "x-pagination-limit": "Page size",
            "x-pagination-page": "This page",
            "x-pagination-total": "Entries in all",
            "x-pagination-total-pages": "Pages in all",
          },
          content: { "application/json": schemas.BillingUsageResponse, ...csv },
        },
      },
      errors: { 410: "The account was created after the endpoint was retired (with Deprecation, Sunset and a successor Link)", 429: "More than 1 request per minute" },
    },
    {
      method: "get",
      path: "/billing/usage-history",
      operationId: "getBillingUsageHistory",
      summary: "Usage, keyset-paged",
      access: "apiKey",
      query: schemas.BillingUsageHistoryQuery,
      responses: {
        200: {
          description: "A page of usage entries and the cursor of the next",
          headers: { ...ACCOUNT_RATE_LIMIT_HEADERS, "x-next-cursor": "The cursor of the next page, when there is one" },
          content: { "application/json": schemas.BillingUsageHistoryResponse, ...csv },
        },
      },
    },
    {
      method: "get",
      path: "/billing/usage-analytics",
      operationId: "getBillingUsageAnalytics",
      summary: "Usage analytics by day, model and key",
      access: "apiKey",
      query: schemas.BillingUsageAnalyticsQuery,
      responses: { 200: { description: "Totals and daily charts", headers: ACCOUNT_RATE_LIMIT_HEADERS, content: { "application/json": schemas.BillingUsageAnalyticsResponse } } },
    },
  ],
});
