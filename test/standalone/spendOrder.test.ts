import { describe, expect, it } from "vitest";
import { epochOf, nextEpochStart, periodStart } from "../../src/billing/epoch.js";
import { costLine } from "../../src/billing/money.js";
import { splitPayment, sumByCurrency } from "../../src/billing/spendOrder.js";

const line = (usd: number, diem = usd) => ({ sku: "x", units: 1, pricePerUnitUsd: usd / 1e6, usdMicros: usd, diemMicros: diem });

describe("spend order: DIEM, then bundled credits, then USD", () => {
  it("pays from DIEM first when it covers the charge", () => {
    const { payments, covered } = splitPayment([line(300)], { diem: 1000, bundled: 1000, usd: 1000 });
    expect(covered).toBe(true);
    expect(sumByCurrency(payments)).toEqual({ diem: 300, bundled: 0, usd: 0 });
  });

  it("spills the unpaid fraction of a line to bundled credits, then USD", () => {
    const { payments, covered } = splitPayment([line(1000), line(500)], { diem: 400, bundled: 300, usd: 10_000 });
    expect(covered).toBe(true);
    expect(sumByCurrency(payments)).toEqual({ diem: 400, bundled: 300, usd: 800 });
  });

  it("converts at each currency's price when DIEM and USD prices differ", () => {
    // 500 DIEM-micros pay half of a line that costs 1000 DIEM or 2000 USD: 1000 USD remain.
    const { payments } = splitPayment([line(2000, 1000)], { diem: 500, bundled: 0, usd: 5000 });
    expect(sumByCurrency(payments)).toEqual({ diem: 500, bundled: 0, usd: 1000 });
  });

  it("reports a shortfall without taking more than the funds", () => {
    const { payments, covered } = splitPayment([line(1000)], { diem: 100, bundled: 100, usd: 100 });
    expect(covered).toBe(false);
    expect(sumByCurrency(payments)).toEqual({ diem: 100, bundled: 100, usd: 100 });
  });

  it("prices tokens per million exactly in micros, rounding up", () => {
    expect(costLine("in", 1_000_000, 1_000_000, { usd: 0.15, diem: 0.15 }).usdMicros).toBe(150_000);
    expect(costLine("in", 7, 1_000_000, { usd: 0.15, diem: 0.15 }).usdMicros).toBe(2);
    expect(costLine("in", 0, 1_000_000, { usd: 3, diem: 3 }).usdMicros).toBe(0);
  });
});

describe("billing epochs", () => {
  const at = (iso: string) => Date.parse(iso);
  it("start at the configured UTC hour", () => {
    expect(epochOf(at("2026-05-01T05:59:59Z"), 6)).toBe(epochOf(at("2026-04-30T06:00:00Z"), 6));
    expect(epochOf(at("2026-05-01T06:00:00Z"), 6)).toBe(epochOf(at("2026-04-30T06:00:00Z"), 6) + 1);
    expect(new Date(nextEpochStart(at("2026-05-01T07:00:00Z"), 6)).toISOString()).toBe("2026-05-02T06:00:00.000Z");
  });
  it("give the windows of key limits", () => {
    const now = at("2026-05-17T10:00:00Z");
    expect(new Date(periodStart("EPOCH", now, 0)).toISOString()).toBe("2026-05-17T00:00:00.000Z");
    expect(new Date(periodStart("MONTH", now, 0)).toISOString()).toBe("2026-05-01T00:00:00.000Z");
    expect(periodStart("LIFETIME", now, 0)).toBe(0);
  });
});
