import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { textCost } from "../../src/billing/pricing.js";
import { createAccount } from "../../src/store/accounts.js";
import { createApiKey, setKeyModelPrivacy } from "../../src/store/apiKeys.js";
import { getBalances, ledgerTotals, listLedgerEntries } from "../../src/store/ledger.js";
import { listUsage } from "../../src/store/usage.js";
import { post, startTestServer, tinyChatEntry, type TestServer } from "../helpers/testServer.js";
import { countReservations } from "../../src/store/reservations.js";

/** $1 per million input tokens, $2 per million output tokens: a 40-token prompt costs 40 micros. */
const PRICED = { pricing: { input: { usd: 1, diem: 1 }, output: { usd: 2, diem: 2 } } };
let server: TestServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

const ask = (max_tokens: number, extra: Record<string, unknown> = {}) => ({
  model: "tiny-chat",
  messages: [{ role: "user", content: "Hello" }],
  max_tokens,
  temperature: 0,
  ...extra,
});

function fundedKey(s: TestServer, usdMicros: number, options: { diemMicros?: number; stakeMicros?: number } = {}) {
  const account = createAccount(s.db, "funded");
  if (usdMicros > 0) s.credits.grant(account.id, "USD", usdMicros, "test");
  if (options.stakeMicros) s.credits.stake(account.id, options.stakeMicros);
  const { secret, record } = createApiKey(s.db, { accountId: account.id, description: "funded", keyType: "INFERENCE" });
  return { key: secret, accountId: account.id, keyId: record.id };
}

const micros = (units: number) => Math.round(units * 1e6);

describe("metered chat", () => {
  it("charges exactly the priced usage, returns the cost object and the balances before the request", async () => {
    server = await startTestServer({ models: [tinyChatEntry(PRICED)] });
    const { key, accountId } = fundedKey(server, 1_000_000);
    const res = await post(server, "/chat/completions", ask(10), { key });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-service-balance-usd")).toBe("1.000000");
    expect(res.headers.get("x-service-balance-diem")).toBe("0.000000");
    const body = (await res.json()) as { usage: { prompt_tokens: number; completion_tokens: number }; cost: { usd: number; diem: number } };
    const expected = body.usage.prompt_tokens * 1 + body.usage.completion_tokens * 2;
    expect(micros(body.cost.usd)).toBe(expected);
    expect(body.cost.diem).toBe(0);
    expect(getBalances(server.db, accountId).USD).toBe(1_000_000 - expected);
    expect(ledgerTotals(server.db, accountId)).toEqual(getBalances(server.db, accountId));
    expect(countReservations(server.db)).toBe(0);
  });

  it("puts the cost in the stream's final chunks", async () => {
    server = await startTestServer({ models: [tinyChatEntry(PRICED)] });
    const { key } = fundedKey(server, 1_000_000);
    const stream = await server.openai(key).chat.completions.create({ ...ask(6), stream: true, stream_options: { include_usage: true } } as never);
    const chunks: any[] = [];
    for await (const chunk of stream as unknown as AsyncIterable<any>) chunks.push(chunk);
    const last = chunks.at(-1);
    expect(micros(last.cost.usd)).toBe(last.usage.prompt_tokens + last.usage.completion_tokens * 2);
  });

  it("refuses with 402 INSUFFICIENT_BALANCE when the most a request can cost is not covered", async () => {
    server = await startTestServer({ models: [tinyChatEntry(PRICED)] });
    const { key, accountId } = fundedKey(server, 100);
    const error = await server
      .openai(key)
      .chat.completions.create(ask(500) as never)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(402);
    const res = await post(server, "/chat/completions", ask(500), { key });
    const body = (await res.json()) as { error: string; code: string };
    expect(body.code).toBe("INSUFFICIENT_BALANCE");
    expect(body.error).toMatch(/lower max_tokens/);
    expect(getBalances(server.db, accountId).USD).toBe(100);
    // A smaller request the balance does cover still runs.
    expect((await post(server, "/chat/completions", ask(5), { key })).status).toBe(200);
  });

  it("50 parallel requests on a balance that covers only some: never negative, each ran and paid or got 402, ledger = sum of costs", async () => {
    server = await startTestServer({ models: [tinyChatEntry({ ...PRICED, queue: { maxWaiting: 64 } })] });
    // Probe what one request costs at most, then fund about 35 of them.
    const probe = fundedKey(server, 1_000_000);
    const probeBody = (await (await post(server, "/chat/completions", ask(20), { key: probe.key })).json()) as { usage: { prompt_tokens: number } };
    const maxCost = probeBody.usage.prompt_tokens * 1 + 20 * 2;
    const { key, accountId } = fundedKey(server, maxCost * 35 + Math.floor(maxCost / 2));
    const before = getBalances(server.db, accountId).USD;

    const results = await Promise.all(
      Array.from({ length: 50 }, async () => {
        const res = await post(server!, "/chat/completions", ask(20), { key });
        return { status: res.status, body: (await res.json()) as { cost?: { usd: number } } };
      }),
    );
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 402);
    expect(ok.length + refused.length).toBe(50);
    expect(ok.length).toBe(35);
    const charged = ok.reduce((sum, r) => sum + micros(r.body.cost!.usd), 0);
    const balance = getBalances(server.db, accountId).USD;
    expect(balance).toBeGreaterThanOrEqual(0);
    expect(before - balance).toBe(charged);
    const ledgerCharges = -listLedgerEntries(server.db, { accountId, kind: "charge" }).reduce((sum, c) => sum + c.deltaMicros, 0);
    expect(ledgerCharges).toBe(charged);
    expect(ledgerTotals(server.db, accountId)).toEqual(getBalances(server.db, accountId));
    expect(countReservations(server.db)).toBe(0);
  });

  it("a client that disconnects mid-stream pays for what was produced, and nothing more", async () => {
    server = await startTestServer({ models: [tinyChatEntry(PRICED)] });
    const { key, accountId } = fundedKey(server, 1_000_000);
    const res = await post(server, "/chat/completions", ask(3000, { stream: true }), { key });
    const reader = res.body!.getReader();
    for (let i = 0; i < 4; i++) await reader.read();
    await reader.cancel();
    let rows = listUsage(server.db, accountId);
    for (let i = 0; i < 100 && rows.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 20));
      rows = listUsage(server.db, accountId);
    }
    const [row] = rows;
    expect(row!.status).toBe(499);
    expect(row!.completionTokens).toBeGreaterThan(0);
    expect(row!.completionTokens).toBeLessThan(3000);
    const expected = row!.promptTokens * 1 + row!.completionTokens * 2;
    expect(1_000_000 - getBalances(server.db, accountId).USD).toBe(expected);
    expect(countReservations(server.db)).toBe(0);
  });

  it("enforces a key's consumption limit with 402 INSUFFICIENT_BALANCE", async () => {
    server = await startTestServer({ models: [tinyChatEntry(PRICED)] });
    const account = createAccount(server.db, "limited");
    server.credits.grant(account.id, "USD", 1_000_000, "test");
    const { secret } = createApiKey(server.db, { accountId: account.id, description: "limited", keyType: "INFERENCE", limitUsdMicros: 250, limitPeriod: "EPOCH" });
    expect((await post(server, "/chat/completions", ask(5), { key: secret })).status).toBe(200);
    let last: Response | undefined;
    for (let i = 0; i < 10; i++) {
      last = await post(server, "/chat/completions", ask(5), { key: secret });
      if (last.status !== 200) break;
    }
    expect(last!.status).toBe(402);
    const body = (await last!.json()) as { code: string; error: string };
    expect(body.code).toBe("INSUFFICIENT_BALANCE");
    expect(body.error).toMatch(/consumption limit/);
    const spent = 1_000_000 - getBalances(server.db, account.id).USD;
    expect(spent).toBeLessThanOrEqual(250);
  });
});

describe("DIEM staking", () => {
  it("spends DIEM first, then USD, and refills the allocation at the epoch's reset hour without carry-over", async () => {
    let now = Date.parse("2026-05-01T10:00:00Z");
    server = await startTestServer({
      models: [tinyChatEntry({ pricing: { input: { usd: 100, diem: 100 }, output: { usd: 200, diem: 200 } } })],
      config: { diemResetHourUtc: 6 },
      now: () => now,
    });
    const { key, accountId } = fundedKey(server, 1_000_000, { stakeMicros: 10_000 });
    expect(getBalances(server.db, accountId).DIEM).toBe(10_000);

    const first = (await (await post(server, "/chat/completions", ask(4), { key })).json()) as any;
    const firstCost = textCost(tinyChatEntry({ pricing: { input: { usd: 100, diem: 100 }, output: { usd: 200, diem: 200 } } }), {
      promptTokens: first.usage.prompt_tokens,
      cachedTokens: 0,
      cacheWriteTokens: 0,
      completionTokens: first.usage.completion_tokens,
    }).reduce((s, l) => s + l.diemMicros, 0);
    expect(micros(first.cost.diem)).toBe(firstCost);
    expect(first.cost.usd).toBe(0);

    // Spend until the allocation is gone: the request that crosses it pays partly in DIEM, partly in USD.
    let crossing: any;
    for (let i = 0; i < 20; i++) {
      const body = (await (await post(server, "/chat/completions", ask(4), { key })).json()) as any;
      if (body.cost.usd > 0) {
        crossing = body;
        break;
      }
    }
    expect(crossing.cost.diem).toBeGreaterThan(0);
    expect(getBalances(server.db, accountId).DIEM).toBe(0);
    const afterUsd = (await (await post(server, "/chat/completions", ask(4), { key })).json()) as any;
    expect(afterUsd.cost.diem).toBe(0);
    expect(afterUsd.cost.usd).toBeGreaterThan(0);

    // 05:59 next day: same epoch, nothing refilled. 06:00: the allocation is back, not more.
    now = Date.parse("2026-05-02T05:59:00Z");
    const res = await post(server, "/chat/completions", ask(1), { key });
    expect(res.headers.get("x-service-balance-diem")).toBe("0.000000");
    now = Date.parse("2026-05-02T06:00:00Z");
    const refilled = await post(server, "/chat/completions", ask(1), { key });
    expect(refilled.headers.get("x-service-balance-diem")).toBe("0.010000");
    expect(ledgerTotals(server.db, accountId)).toEqual(getBalances(server.db, accountId));

    // Unused DIEM expires at the next reset rather than carrying over.
    now = Date.parse("2026-05-03T06:00:00Z");
    const next = await post(server, "/chat/completions", ask(1), { key });
    expect(next.headers.get("x-service-balance-diem")).toBe("0.010000");
    const expiries = listLedgerEntries(server.db, { accountId, kind: "diem_expiry" }).length;
    expect(expiries).toBeGreaterThanOrEqual(1);
  });
});

describe("admission", () => {
  it("granted DIEM lasts the epoch it is granted in", async () => {
    let now = Date.parse("2026-05-01T10:00:00Z");
    server = await startTestServer({ models: [tinyChatEntry(PRICED)], now: () => now });
    const { key, accountId } = fundedKey(server, 0);
    server.credits.grant(accountId, "DIEM", 500_000, "test");
    const res = await post(server, "/chat/completions", ask(2), { key });
    expect(res.headers.get("x-service-balance-diem")).toBe("0.500000");
    expect(((await res.json()) as { cost: { diem: number } }).cost.diem).toBeGreaterThan(0);
    now = Date.parse("2026-05-02T00:00:00Z");
    expect((await post(server, "/chat/completions", ask(2), { key })).status).toBe(402);
  });

  it("refuses a key whose modelPrivacy excludes the model with 403", async () => {
    server = await startTestServer({ models: [tinyChatEntry({ privacy: "anonymized" })] });
    const { key, keyId } = fundedKey(server, 1_000_000);
    expect((await post(server, "/chat/completions", ask(1), { key })).status).toBe(200);
    setKeyModelPrivacy(server.db, keyId, "PRIVATE_ONLY");
    const res = await post(server, "/chat/completions", ask(1), { key });
    expect(res.status).toBe(403);
    expect(((await res.json()) as { error: string }).error).toMatch(/PRIVATE_ONLY/);
  });
});
