import { z } from "zod";
import { unitsToMicros } from "../../billing/money.js";

/**
 * Admin endpoints behind the web console: every account of the node with its balances, credit
 * grants, and usage per day and model. The node operator's keys only (any other key gets 403).
 */

// ---------------------------------------------------------------------------------------
// GET /admin/accounts

export const AdminAccountsQuery = z.looseObject({
  limit: z.coerce.number().int().min(1).max(1000).default(200),
});

export const AdminAccount = z.object({
  id: z.string(),
  name: z.string(),
  kind: z.enum(["user", "wallet"]),
  createdAt: z.string(),
  /** Whole units; DIEM is the current epoch's balance (refilled from the stake if due). */
  balances: z.object({ USD: z.number(), DIEM: z.number(), BUNDLED_CREDITS: z.number() }),
  stakedDiem: z.number(),
  keys: z.object({ active: z.number().int(), total: z.number().int() }),
});
export type AdminAccount = z.infer<typeof AdminAccount>;

export const AdminAccountsResponse = z.object({ object: z.literal("list"), data: z.array(AdminAccount) });
export type AdminAccountsResponse = z.infer<typeof AdminAccountsResponse>;

// ---------------------------------------------------------------------------------------
// POST /admin/accounts/{id}/credits

export const GrantCreditsRequest = z.strictObject({
  currency: z.enum(["USD", "DIEM", "BUNDLED_CREDITS"]),
  /** Whole units, at most 6 decimals are kept (the ledger counts micros). */
  amount: z
    .number()
    .positive("amount must be greater than 0")
    .max(1_000_000, "amount is at most 1,000,000 per grant")
    // zod runs this check even after `positive` failed: only a positive amount reaches the conversion.
    .refine((amount) => amount > 0 && unitsToMicros(amount) > 0, "amount must be at least 0.000001 (the ledger counts micros)"),
  note: z.string().max(200, "note is at most 200 characters").optional(),
});
export type GrantCreditsRequest = z.infer<typeof GrantCreditsRequest>;

export const GrantCreditsResponse = z.object({ success: z.literal(true), data: AdminAccount });

// ---------------------------------------------------------------------------------------
// GET /admin/usage

export const AdminUsageQuery = z.looseObject({
  days: z.coerce.number().int().min(1).max(90).default(14),
});

export const AdminUsageRow = z.object({
  /** UTC day, YYYY-MM-DD. */
  date: z.string(),
  model: z.string(),
  requests: z.number().int(),
  tokens: z.number().int(),
  /** Net of refunds, whole units. USD includes bundled credits. */
  spendUsd: z.number(),
  spendDiem: z.number(),
});

export const AdminUsageResponse = z.object({
  /** Every day of the window, oldest first (days without traffic included). */
  days: z.array(z.string()),
  models: z.array(z.string()),
  data: z.array(AdminUsageRow),
});
export type AdminUsageResponse = z.infer<typeof AdminUsageResponse>;
