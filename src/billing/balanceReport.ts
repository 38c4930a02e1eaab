import type { BillingBalanceResponse } from "../api/billing/schema.js";
import type { BalanceSnapshot } from "./credits.js";
import { microsToUnits } from "./money.js";

/** The reference's balance record from a credits snapshot (GET /billing/balance, GET /api_keys/rate_limits and `hearth credits balance`). */
export function toBalanceResponse(snapshot: BalanceSnapshot): BillingBalanceResponse {
  const available = {
    diem: snapshot.diem - snapshot.held.diem,
    bundled: snapshot.bundled - snapshot.held.bundled,
    usd: snapshot.usd - snapshot.held.usd,
  };
  // THE spend order (billing/spendOrder.ts): DIEM, then bundled credits, then USD.
  const consumptionCurrency = available.diem > 0 ? "DIEM" : available.bundled > 0 ? "BUNDLED_CREDITS" : available.usd > 0 ? "USD" : null;
  return {
    canConsume: consumptionCurrency !== null,
    consumptionCurrency,
    balances: {
      diem: snapshot.stakedDiem > 0 || snapshot.diem > 0 ? microsToUnits(snapshot.diem) : null,
      usd: microsToUnits(snapshot.usd + snapshot.bundled),
    },
    diemEpochAllocation: microsToUnits(snapshot.stakedDiem),
  };
}
