import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Credits, type CreditMovement } from "../../src/billing/credits.js";
import type { CostLine } from "../../src/billing/money.js";
import { PaymentRequiredError } from "../../src/errors.js";
import { createAccount } from "../../src/store/accounts.js";
import { createApiKey } from "../../src/store/apiKeys.js";
import { openStore, type Db } from "../../src/store/Store.js";

/**
 * Credits through its public methods on an in-memory SQLite database with every migration:
 * holds, settlement, refunds, the spend order (DIEM, then bundled credits, then USD), epochs
 * and key limits. Amounts are micros (1e-6 USD or DIEM); Cost values are whole units.
 */

const NOON = Date.UTC(2026, 0, 10, 12);
const DAY = 86_400_000;
let db: Db;
let now: number;
let credits: Credits;
let account: string;
let requests = 0;

beforeEach(() => {
  db = openStore(":memory:");
  now = NOON;
  credits = new Credits(db, { resetHourUtc: 0, now: () => now, bootId: "boot-1" });
  account = createAccount(db, "alice", "user", now).id;
  // Request ids count from 1 in each test's fresh database.
  requests = 0;
});
afterEach(() => db.close());

/** One priced item costing `usd` micros paid in USD or `diem` micros paid in DIEM. */
const line = (usd: number, diem = usd): CostLine => ({ sku: "tokens", units: 1, pricePerUnitUsd: usd / 1e6, usdMicros: usd, diemMicros: diem });
const reserve = (maxUsd: number, options: { apiKeyId?: string; maxDiem?: number } = {}) =>
  credits.reserve({ requestId: `req-${++requests}`, accountId: account, apiKeyId: options.apiKeyId ?? null, maxLines: [line(maxUsd, options.maxDiem ?? maxUsd)] });
const balances = () => {
  const { usd, bundled, diem, held } = credits.snapshot(account);
  return { usd, bundled, diem, held };
};
const NOTHING_HELD = { usd: 0, bundled: 0, diem: 0 };

describe("reserve", () => {
  it("holds the most a request can cost without moving money", () => {
    credits.grant(account, "USD", 1000, "test");
    const hold = reserve(600);
    expect(hold).toEqual({ requestId: "req-1", accountId: account, apiKeyId: null, funds: { diem: 0, bundled: 0, usd: 600 } });
    expect(balances()).toEqual({ usd: 1000, bundled: 0, diem: 0, held: { usd: 600, bundled: 0, diem: 0 } });
  });

  it("refuses a request the balance cannot cover with 402 INSUFFICIENT_BALANCE, holding nothing", () => {
    credits.grant(account, "USD", 1000, "test");
    let error: unknown;
    try {
      reserve(1001);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(PaymentRequiredError);
    expect(error).toMatchObject({
      status: 402,
      message: "Insufficient balance: this request can cost up to $0.001001 and the account has $0.001000 and 0.000000 DIEM available. Add credits.",
    });
    expect(balances().held).toEqual(NOTHING_HELD);
    // Exactly the balance is fine.
    expect(reserve(1000).funds.usd).toBe(1000);
  });

  it("counts other requests' holds: concurrent requests cannot spend the same money twice", () => {
    credits.grant(account, "USD", 1000, "test");
    const first = reserve(600);
    expect(() => reserve(600)).toThrow(PaymentRequiredError);
    expect(reserve(400).funds.usd).toBe(400);
    credits.settle(first, [line(100)], { model: "m" });
    // The first request's unused 500 is free again; 900 left, 400 of it still held.
    expect(balances()).toEqual({ usd: 900, bundled: 0, diem: 0, held: { usd: 400, bundled: 0, diem: 0 } });
    expect(reserve(500).funds.usd).toBe(500);
    expect(() => reserve(1)).toThrow(PaymentRequiredError);
  });

  it("a free request needs no balance and leaves no hold", () => {
    const hold = reserve(0);
    expect(hold.funds).toEqual(NOTHING_HELD);
    expect(credits.settle(hold, [line(0)], { model: "m" }).cost).toEqual({ usd: 0, diem: 0 });
  });
});

describe("settle", () => {
  beforeEach(() => credits.grant(account, "USD", 1000, "test"));

  it.each([
    ["below the hold: charges the cost, releases the rest", 250, 250],
    ["at the hold", 600, 600],
    ["above the hold: charges the hold, never more", 900, 600],
  ])("%s", (_name, actual, charged) => {
    const hold = reserve(600);
    const { cost, payments } = credits.settle(hold, [line(actual)], { model: "m" });
    expect(cost).toEqual({ usd: charged / 1e6, diem: 0 });
    expect(payments.map((p) => [p.currency, p.micros])).toEqual([["USD", charged]]);
    expect(balances()).toEqual({ usd: 1000 - charged, bundled: 0, diem: 0, held: NOTHING_HELD });
  });

  it("settling the same hold twice charges once", () => {
    const hold = reserve(600);
    credits.settle(hold, [line(300)], { model: "m" });
    expect(credits.settle(hold, [line(300)], { model: "m" })).toEqual({ cost: { usd: 0, diem: 0 }, payments: [] });
    expect(balances().usd).toBe(700);
  });

  it("a hold left by a process that stopped is released at the next start, not charged", () => {
    reserve(600);
    const restarted = new Credits(db, { resetHourUtc: 0, now: () => now, bootId: "boot-2" });
    expect(restarted.releaseOrphanedHolds()).toBe(1);
    expect(balances()).toEqual({ usd: 1000, bundled: 0, diem: 0, held: NOTHING_HELD });
    expect(restarted.releaseOrphanedHolds()).toBe(0);
  });
});

describe("refund", () => {
  it("reverses each charge of a request in its own currency", () => {
    credits.grant(account, "USD", 1000, "test");
    credits.stake(account, 100);
    const hold = reserve(600, { maxDiem: 600 });
    credits.settle(hold, [line(400, 400)], { model: "m" });
    // 100 DIEM paid a quarter of the line, USD the rest: ceil(400 * 300 / 400) = 300.
    expect(balances()).toEqual({ usd: 700, bundled: 0, diem: 0, held: NOTHING_HELD });
    expect(credits.refund(hold.requestId, "job failed")).toEqual({ usd: 300 / 1e6, diem: 100 / 1e6 });
    expect(balances()).toEqual({ usd: 1000, bundled: 0, diem: 100, held: NOTHING_HELD });
  });

  it("refunds nothing for a request that was not charged", () => {
    expect(credits.refund("never-charged", "n/a")).toEqual({ usd: 0, diem: 0 });
  });

  it("is not idempotent on its own: exactly once is the caller's transaction (a job's refunded_at)", () => {
    credits.grant(account, "USD", 1000, "test");
    const hold = reserve(600);
    credits.settle(hold, [line(200)], { model: "m" });
    // The caller's guard, in the same transaction as the refund (video jobs use their refunded_at column).
    db.exec("CREATE TABLE refund_guard (request_id TEXT PRIMARY KEY)");
    const refundOnce = db.transaction(() => {
      const first = db.prepare("INSERT OR IGNORE INTO refund_guard (request_id) VALUES (?)").run(hold.requestId).changes === 1;
      return first ? credits.refund(hold.requestId, "once") : { usd: 0, diem: 0 };
    });
    expect(refundOnce()).toEqual({ usd: 200 / 1e6, diem: 0 });
    expect(refundOnce()).toEqual({ usd: 0, diem: 0 });
    expect(balances().usd).toBe(1000);
    // Without a guard a second call reverses the charges again.
    credits.refund(hold.requestId, "twice");
    expect(balances().usd).toBe(1200);
  });

  it("reports each committed charge and refund to its listeners", () => {
    const seen: CreditMovement[] = [];
    credits.onMovement((m) => seen.push(m));
    credits.grant(account, "USD", 1000, "test");
    const hold = reserve(600);
    credits.settle(hold, [line(200)], { model: "m" });
    credits.refund(hold.requestId, "r");
    expect(seen).toEqual([
      { kind: "charge", currency: "USD", micros: 200, model: "m" },
      { kind: "refund", currency: "USD", micros: 200, model: "m" },
    ]);
  });
});

describe("spend order", () => {
  it("DIEM first, then bundled credits, then USD, on the hold and on the charge", () => {
    credits.stake(account, 300);
    credits.grant(account, "BUNDLED_CREDITS", 200, "promo");
    credits.grant(account, "USD", 1000, "test");
    const hold = reserve(1000, { maxDiem: 1000 });
    // 300 DIEM pays 30% of the line; the other 70% (700 micros USD) comes from bundled, then USD.
    expect(hold.funds).toEqual({ diem: 300, bundled: 200, usd: 500 });
    const { cost, payments } = credits.settle(hold, [line(500, 500)], { model: "m" });
    expect(payments.map((p) => [p.currency, p.micros])).toEqual([
      ["DIEM", 300],
      ["BUNDLED_CREDITS", 200],
    ]);
    // Bundled credits count as USD in the cost.
    expect(cost).toEqual({ usd: 200 / 1e6, diem: 300 / 1e6 });
    expect(balances()).toEqual({ usd: 1000, bundled: 0, diem: 0, held: NOTHING_HELD });
  });

  it("a line without a DIEM price is paid in USD even when DIEM is available", () => {
    credits.stake(account, 1000);
    credits.grant(account, "USD", 1000, "test");
    const hold = reserve(400, { maxDiem: 0 });
    expect(hold.funds).toEqual({ diem: 0, bundled: 0, usd: 400 });
  });
});

describe("epochs", () => {
  it("DIEM refills to the stake at the reset hour; last epoch's unused DIEM expires", () => {
    credits.stake(account, 300);
    credits.settle(reserve(100, { maxDiem: 100 }), [line(100, 100)], { model: "m" });
    expect(balances().diem).toBe(200);
    now = Date.UTC(2026, 0, 10, 23, 59);
    expect(balances().diem).toBe(200);
    now = Date.UTC(2026, 0, 11, 0, 0);
    expect(balances().diem).toBe(300);
  });

  it("DIEM held by a request in flight at the reset does not expire", () => {
    credits.stake(account, 300);
    const hold = reserve(200, { maxDiem: 200 });
    now += DAY;
    // 100 unheld DIEM expired, 300 allocated: 200 held + 300 new.
    expect(balances()).toEqual({ usd: 0, bundled: 0, diem: 500, held: { usd: 0, bundled: 0, diem: 200 } });
    credits.settle(hold, [line(200, 200)], { model: "m" });
    expect(balances().diem).toBe(300);
  });

  it("granted DIEM belongs to the current epoch", () => {
    now += DAY;
    credits.grant(account, "DIEM", 50, "gift");
    expect(balances().diem).toBe(50);
  });

  it("a key's EPOCH consumption limit counts spending and holds, and resets with the epoch", () => {
    credits.grant(account, "USD", 10_000, "test");
    const key = createApiKey(db, { accountId: account, description: "limited", keyType: "INFERENCE", limitUsdMicros: 500, limitPeriod: "EPOCH" }, now).record.id;
    const held = reserve(300, { apiKeyId: key });
    expect(() => reserve(201, { apiKeyId: key })).toThrow("Insufficient balance: this API key's USD consumption limit of $0.0005 for today's epoch is reached.");
    credits.settle(held, [line(300)], { model: "m" });
    expect(credits.keyPeriodSpend(key, "EPOCH")).toEqual({ usd: 300, diem: 0 });
    expect(reserve(200, { apiKeyId: key }).funds.usd).toBe(200);
    now += DAY;
    expect(credits.keyPeriodSpend(key, "EPOCH")).toEqual({ usd: 200, diem: 0 });
    expect(credits.keyPeriodSpend(key, "LIFETIME")).toEqual({ usd: 500, diem: 0 });
    // The account still has money; only the key's window matters.
    expect(reserve(300, { apiKeyId: key }).funds.usd).toBe(300);
  });
});
