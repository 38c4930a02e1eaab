import type { CostLine } from "./money.js";

/**
 * THE spend order, in one place: a charge draws on DIEM first (the daily staking allocation,
 * lost at the next epoch anyway), then bundled credits, then the USD balance.
 *
 * DIEM pays a line at the line's DIEM price; when DIEM runs out part-way through a line, the
 * unpaid fraction of the line is paid at its USD price from bundled credits, then USD.
 */
export interface Funds {
  diem: number;
  bundled: number;
  usd: number;
}

export interface Payment {
  line: CostLine;
  currency: "DIEM" | "BUNDLED_CREDITS" | "USD";
  micros: number;
}

/**
 * Splits `lines` across `funds` in spend order. Returns the payments and whether the funds
 * covered everything; amounts never exceed the funds (a shortfall is reported, not taken).
 */
export function splitPayment(lines: readonly CostLine[], funds: Funds): { payments: Payment[]; covered: boolean } {
  const left = { ...funds };
  const payments: Payment[] = [];
  let covered = true;
  for (const line of lines) {
    let usdDue = line.usdMicros;
    if (line.diemMicros > 0 && left.diem > 0) {
      const diemPaid = Math.min(left.diem, line.diemMicros);
      left.diem -= diemPaid;
      payments.push({ line, currency: "DIEM", micros: diemPaid });
      usdDue = Math.ceil((line.usdMicros * (line.diemMicros - diemPaid)) / line.diemMicros);
    }
    const bundledPaid = Math.min(left.bundled, usdDue);
    if (bundledPaid > 0) {
      left.bundled -= bundledPaid;
      usdDue -= bundledPaid;
      payments.push({ line, currency: "BUNDLED_CREDITS", micros: bundledPaid });
    }
    const usdPaid = Math.min(left.usd, usdDue);
    if (usdPaid > 0) {
      left.usd -= usdPaid;
      usdDue -= usdPaid;
      payments.push({ line, currency: "USD", micros: usdPaid });
    }
    if (usdDue > 0) covered = false;
  }
  return { payments, covered };
}

export function sumByCurrency(payments: readonly Payment[]): Funds {
  const funds: Funds = { diem: 0, bundled: 0, usd: 0 };
  for (const p of payments) {
    if (p.currency === "DIEM") funds.diem += p.micros;
    else if (p.currency === "BUNDLED_CREDITS") funds.bundled += p.micros;
    else funds.usd += p.micros;
  }
  return funds;
}
