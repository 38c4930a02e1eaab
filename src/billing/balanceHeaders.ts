import type { BalanceSnapshot } from "./credits.js";
import { microsToUnits } from "./money.js";

/** x-service-balance-* headers: balances before the request (USD includes bundled credits). */
export function balanceHeaders(balance: BalanceSnapshot): Record<string, string> {
  return {
    "x-service-balance-usd": microsToUnits(balance.usd + balance.bundled).toFixed(6),
    "x-service-balance-diem": microsToUnits(balance.diem).toFixed(6),
  };
}
