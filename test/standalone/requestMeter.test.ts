import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Credits } from "../../src/billing/credits.js";
import type { CostLine } from "../../src/billing/money.js";
import { RequestMeter } from "../../src/billing/RequestMeter.js";
import type { RequestContext } from "../../src/http/requestContext.js";
import { createAccount } from "../../src/store/accounts.js";
import { openStore, type Db } from "../../src/store/Store.js";

/** RequestMeter on Credits over an in-memory SQLite database with every migration. Amounts are micros. */

let db: Db;
let credits: Credits;
let account: string;
beforeEach(() => {
  db = openStore(":memory:");
  credits = new Credits(db, { resetHourUtc: 0, now: () => Date.UTC(2026, 0, 10, 12), bootId: "boot-1" });
  account = createAccount(db, "alice", "user").id;
});
afterEach(() => db.close());

const context = (auth = true) =>
  ({
    requestId: "req-1",
    auth: auth ? { kind: "wallet", accountId: account, apiKeyId: null, keyType: "INFERENCE", rateLimitTier: "standard", rateLimitOverrides: null } : undefined,
  }) as unknown as RequestContext;
/** `units` seconds at 100 micros each. */
const seconds = (units: number): CostLine[] => (units > 0 ? [{ sku: "asr-second", units, pricePerUnitUsd: 100 / 1e6, usdMicros: 100 * units, diemMicros: 100 * units }] : []);
const held = () => credits.snapshot(account).held.usd;

describe("RequestMeter", () => {
  it("mostAffordable: the most units the balance holds, by dry runs that hold nothing", () => {
    const meter = new RequestMeter(credits, context(), "asr");
    expect(meter.mostAffordable(3600, seconds)).toBe(0);
    credits.grant(account, "USD", 550, "test");
    expect(meter.mostAffordable(3600, seconds)).toBe(5);
    expect(meter.mostAffordable(3, seconds)).toBe(3);
    expect(held()).toBe(0);
    // What other requests hold is not the caller's to spend.
    new RequestMeter(credits, { ...context(), requestId: "req-2" }, "asr").reserve(seconds(2));
    expect(meter.mostAffordable(3600, seconds)).toBe(3);
    // Nobody to bill: everything.
    expect(new RequestMeter(credits, context(false), "asr").mostAffordable(3600, seconds)).toBe(3600);
  });

  it("requireAffordable: reserve's 402, holding nothing", () => {
    const meter = new RequestMeter(credits, context(), "asr");
    expect(() => meter.requireAffordable(seconds(1))).toThrow(/^Insufficient balance: this request can cost up to \$0\.000100 .* Add credits\.$/);
    credits.grant(account, "USD", 100, "test");
    meter.requireAffordable(seconds(1));
    expect(held()).toBe(0);
  });

  it("holds nothing once settled: work that outlived its request cannot leave a hold no settle releases", () => {
    credits.grant(account, "USD", 1000, "test");
    const meter = new RequestMeter(credits, context(), "asr");
    // The request ended before its work reserved (the metered request settles every meter with nothing).
    expect(meter.settle([])).toEqual({ usd: 0, diem: 0 });
    expect(() => meter.reserve(seconds(3))).toThrow(/request req-1 has ended/);
    expect(held()).toBe(0);
    expect(credits.snapshot(account).usd).toBe(1000);
  });
});
