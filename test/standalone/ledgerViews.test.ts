import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Credits } from "../../src/billing/credits.js";
import { costLine } from "../../src/billing/money.js";
import { createAccount } from "../../src/store/accounts.js";
import { creditsChargedSince, dailySpendByModel, getBalances, usdHistory } from "../../src/store/ledger.js";
import { openStore, type Db } from "../../src/store/Store.js";
import { dailyRequestsByModel, recordUsage } from "../../src/store/usage.js";

/**
 * The store's read-only views over the ledger and usage tables (the console's daily statistics,
 * a wallet's history, the RPC proxy's credit count), on a real SQLite file filled through
 * Credits as requests fill it.
 */

const DAY = 86_400_000;
const DAY1 = Date.parse("2026-05-01T00:00:00Z");
const PRICE = { usd: 1, diem: 1 };

let path: string;
let db: Db;
let now: number;
let credits: Credits;
let accountId: string;

beforeEach(() => {
  path = join(tmpdir(), `hearth-ledger-views-${process.pid}-${Date.now()}.db`);
  db = openStore(path);
  now = DAY1 + 10 * 3_600_000;
  credits = new Credits(db, { resetHourUtc: 0, now: () => now, bootId: "test" });
  accountId = createAccount(db, "views", "user", now).id;
  credits.grant(accountId, "USD", 10_000_000, "seed");
});

afterEach(() => {
  db.close();
  for (const suffix of ["", "-wal", "-shm"]) rmSync(`${path}${suffix}`, { force: true });
});

/** Charges `lines` (each `micros` USD) under `requestId`, as a settled request does. */
function charge(requestId: string, model: string | null, micros: number[], sku = "sku") {
  const lines = micros.map((m) => costLine(sku, m, 1_000_000, PRICE));
  const hold = credits.reserve({ requestId, accountId, apiKeyId: null, maxLines: lines });
  credits.settle(hold, lines, { model });
}

const usage = (requestId: string, model: string | null, tokens: number) =>
  recordUsage(db, {
    requestId,
    accountId,
    apiKeyId: null,
    endpoint: "/chat/completions",
    model,
    promptTokens: tokens,
    completionTokens: 1,
    cachedTokens: 0,
    durationMs: 5,
    status: 200,
    finishReason: "stop",
    createdAt: now,
  });

describe("daily statistics", () => {
  it("group requests and spend (charges less refunds) by UTC day and model, a missing model under its placeholder", () => {
    charge("a1", "m", [100, 20]);
    usage("a1", "m", 10);
    charge("a2", null, [7]);
    usage("a2", null, 3);
    now += DAY; // late on day 2 is still day 2
    now += 13 * 3_600_000;
    charge("b1", "m", [50]);
    usage("b1", "m", 4);
    charge("b2", "m", [5]);
    credits.refund("b2", "failed");

    const sortRows = <T extends { day: number; model: string }>(rows: T[]) => rows.sort((x, y) => x.day - y.day || x.model.localeCompare(y.model));
    expect(sortRows(dailySpendByModel(db, DAY1, "(none)"))).toEqual([
      { day: DAY1, model: "(none)", usd: 7, diem: 0 },
      { day: DAY1, model: "m", usd: 120, diem: 0 },
      { day: DAY1 + DAY, model: "m", usd: 50, diem: 0 },
    ]);
    expect(sortRows(dailyRequestsByModel(db, DAY1, "(none)"))).toEqual([
      { day: DAY1, model: "(none)", requests: 1, tokens: 4 },
      { day: DAY1, model: "m", requests: 1, tokens: 11 },
      { day: DAY1 + DAY, model: "m", requests: 1, tokens: 5 },
    ]);
    // `since` cuts by time, not by day.
    expect(dailySpendByModel(db, DAY1 + DAY, "(none)")).toEqual([{ day: DAY1 + DAY, model: "m", usd: 50, diem: 0 }]);
  });
});

describe("a wallet's USD history", () => {
  it("sums a request's charges into one entry, newest first, with the balance after each", () => {
    charge("r1", "m", [100, 20]);
    charge("r2", "m", [30]);
    const history = usdHistory(db, accountId, 10, 0);
    expect(history.map(({ kind, deltaMicros, requestId, balanceAfterMicros }) => ({ kind, deltaMicros, requestId, balanceAfterMicros }))).toEqual([
      { kind: "charge", deltaMicros: -30, requestId: "r2", balanceAfterMicros: 10_000_000 - 150 },
      { kind: "charge", deltaMicros: -120, requestId: "r1", balanceAfterMicros: 10_000_000 - 120 },
      { kind: "grant", deltaMicros: 10_000_000, requestId: null, balanceAfterMicros: 10_000_000 },
    ]);
    expect(history[0]!.balanceAfterMicros).toBe(getBalances(db, accountId).USD);
    expect(usdHistory(db, accountId, 1, 1).map((entry) => entry.requestId)).toEqual(["r1"]);
  });
});

describe("credits charged since", () => {
  it("counts each request once, however many cost lines it has, and only the given sku", () => {
    charge("c1", "rpc", [14, 14], "crypto-rpc-credit");
    charge("c2", "rpc", [6], "crypto-rpc-credit");
    charge("c3", "m", [40], "other");
    // units of a line are micros / 1e6 here: c1 counts 14e-6 once, not twice.
    expect(creditsChargedSince(db, accountId, "crypto-rpc-credit", DAY1)).toBeCloseTo(20e-6, 12);
    expect(creditsChargedSince(db, accountId, "crypto-rpc-credit", now + 1)).toBe(0);
  });
});
