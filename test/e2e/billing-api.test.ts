import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BILLING_USAGE_CUTOFF } from "../../src/api/billing/service.js";
import { USAGE_CSV_COLUMNS } from "../../src/billing/usageReport.js";
import { createAccount } from "../../src/store/accounts.js";
import { createApiKey } from "../../src/store/apiKeys.js";
import { applyEntry, grantCredits, toMicros, type Currency } from "../../src/store/ledger.js";
import { post, startTestServer, tinyChatEntry, type TestServer } from "../helpers/testServer.js";

/** The server's clock: billing timestamps, rate-limit windows and cursor expiry follow it. */
const T0 = Date.UTC(2026, 10, 20, 12, 0, 0);
let clock = T0;
const tick = (ms: number) => (clock += ms);
const MINUTE = 60_000;
const DAY = 86_400_000;

let server: TestServer;

interface Caller {
  key: string;
  accountId: string;
  keyId: string;
}

/** An account created at `createdAt` (the 410 rule looks at it) with an inference key. */
function callerCreatedAt(createdAt: number, description = "test key"): Caller {
  const account = createAccount(server.db, description, "user", createdAt);
  const { secret, record } = createApiKey(server.db, { accountId: account.id, description, keyType: "INFERENCE" }, clock);
  return { key: secret, accountId: account.id, keyId: record.id };
}
const OLD = Date.UTC(2026, 0, 1);

async function get(path: string, caller: Caller | null, accept?: string) {
  const headers: Record<string, string> = {};
  if (caller) headers.authorization = `Bearer ${caller.key}`;
  if (accept) headers.accept = accept;
  return fetch(`${server.baseUrl}${path}`, { headers });
}
const json = async (res: Response) => (await res.json()) as any;

async function chat(caller: Caller) {
  tick(MINUTE);
  // Greedy: the random model never ends its turn on the first token, so every chat has an output charge row.
  const res = await post(
    server,
    "/chat/completions",
    { model: "tiny-chat", messages: [{ role: "user", content: "hello there" }], max_tokens: 3, temperature: 0 },
    { key: caller.key },
  );
  expect(res.status).toBe(200);
  return json(res);
}

interface LedgerRow {
  id: number;
  currency: Currency;
  delta_micros: number;
  sku: string;
  units: number;
  price_per_unit_usd: number;
  note: string | null;
  request_id: string;
  created_at: number;
  duration_ms: number | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
}
/** The account's charge rows straight from SQLite (the test's own query), oldest first. */
const charges = (accountId: string): LedgerRow[] =>
  server.db
    .prepare(
      `SELECT l.*, u.duration_ms, u.prompt_tokens, u.completion_tokens FROM ledger l LEFT JOIN usage u ON u.request_id = l.request_id
       WHERE l.account_id = ? AND l.kind = 'charge' ORDER BY l.created_at, l.id`,
    )
    .all(accountId) as LedgerRow[];

const expectedEntry = (r: LedgerRow) => ({
  timestamp: new Date(r.created_at).toISOString(),
  sku: r.sku,
  pricePerUnitUsd: r.price_per_unit_usd,
  units: r.units,
  amount: -r.delta_micros / 1e6,
  currency: r.currency,
  notes: r.note ?? "API Inference",
  inferenceDetails: { requestId: r.request_id, inferenceExecutionTime: r.duration_ms, promptTokens: r.prompt_tokens, completionTokens: r.completion_tokens },
});

/** RFC 4180 reader (quoted fields, doubled quotes, CRLF records). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") {
      row.push(field);
      field = "";
    } else if (c === "\r" && text[i + 1] === "\n") {
      row.push(field);
      rows.push(row);
      row = [];
      field = "";
      i++;
    } else field += c;
  }
  if (field !== "" || row.length > 0) rows.push([...row, field]);
  return rows;
}
const num = (v: string) => (v === "" ? null : Number(v));
/** CSV records back into entries (`withUnitAlias`: the deprecated endpoint's extra `unit`). */
function csvEntries(text: string, withUnitAlias = false) {
  const [header, ...records] = parseCsv(text);
  expect(header).toEqual([...USAGE_CSV_COLUMNS]);
  return records.map((values) => {
    const r = Object.fromEntries(header!.map((name, i) => [name, values[i]!]));
    return {
      timestamp: r.timestamp,
      sku: r.sku,
      pricePerUnitUsd: Number(r.pricePerUnitUsd),
      units: Number(r.units),
      ...(withUnitAlias ? { unit: Number(r.units) } : {}),
      amount: Number(r.amount),
      currency: r.currency,
      notes: r.notes,
      inferenceDetails: r.requestId
        ? {
            requestId: r.requestId,
            inferenceExecutionTime: num(r.inferenceExecutionTime!),
            promptTokens: num(r.promptTokens!),
            completionTokens: num(r.completionTokens!),
            ...(r.user ? { user: r.user } : {}),
            ...(r.metadata ? { metadata: JSON.parse(r.metadata) } : {}),
          }
        : null,
    };
  });
}

/** A: an account from before the cut-off with usage in all three currencies (12 charge rows). */
let legacy: Caller;
/** Times of legacy's six chat requests. */
const requestTimes: number[] = [];

beforeAll(async () => {
  server = await startTestServer({ models: [tinyChatEntry({ pricing: { input: { usd: 1, diem: 1 }, output: { usd: 2, diem: 2 } } })], now: () => clock });
  legacy = callerCreatedAt(OLD, "legacy key");
  grantCredits(server.db, legacy.accountId, "USD", toMicros(1), "test", clock);
  for (let i = 0; i < 2; i++) {
    await chat(legacy);
    requestTimes.push(clock);
  }
  server.credits.stake(legacy.accountId, toMicros(5));
  for (let i = 0; i < 2; i++) {
    await chat(legacy);
    requestTimes.push(clock);
  }
  server.credits.stake(legacy.accountId, 0);
  server.credits.grant(legacy.accountId, "BUNDLED_CREDITS", toMicros(1), "test");
  for (let i = 0; i < 2; i++) {
    await chat(legacy);
    requestTimes.push(clock);
  }
});
afterAll(() => server.stop());

describe("GET /billing/balance", () => {
  it("reports balances in the reference's shape, the next charge's currency in spend order", async () => {
    const caller = server.createKey();
    const balance = async () => {
      const res = await get("/billing/balance", { ...caller });
      expect(res.status).toBe(200);
      return json(res);
    };
    expect(await balance()).toEqual({ canConsume: false, consumptionCurrency: null, balances: { diem: null, usd: 0 }, diemEpochAllocation: 0 });
    grantCredits(server.db, caller.accountId, "USD", toMicros(2), "test", clock);
    expect(await balance()).toEqual({ canConsume: true, consumptionCurrency: "USD", balances: { diem: null, usd: 2 }, diemEpochAllocation: 0 });
    server.credits.grant(caller.accountId, "BUNDLED_CREDITS", toMicros(0.5), "test");
    expect(await balance()).toEqual({ canConsume: true, consumptionCurrency: "BUNDLED_CREDITS", balances: { diem: null, usd: 2.5 }, diemEpochAllocation: 0 });
    server.credits.stake(caller.accountId, toMicros(3));
    expect(await balance()).toEqual({ canConsume: true, consumptionCurrency: "DIEM", balances: { diem: 3, usd: 2.5 }, diemEpochAllocation: 3 });
    expect((await get("/billing/balance", null)).status).toBe(401);
  });
});

describe("GET /billing/usage (deprecated)", () => {
  /** Each call moves past the endpoint's one-request-per-minute window first. */
  const legacyUsage = (query: string, accept?: string) => {
    tick(MINUTE + 1000);
    return get(`/billing/usage?${query}`, legacy, accept);
  };

  it("returns every charge of the ledger, newest first, with inference details, deprecation notice and pagination headers", async () => {
    const rows = charges(legacy.accountId);
    expect(rows.map((r) => r.currency).sort()).toEqual([...Array(4).fill("BUNDLED_CREDITS"), ...Array(4).fill("DIEM"), ...Array(4).fill("USD")]);
    const res = await legacyUsage("limit=500");
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body.data).toEqual(rows.reverse().map((r) => ({ ...expectedEntry(r), unit: r.units })));
    for (const entry of body.data) {
      expect(entry.amount).toBeGreaterThan(0);
      expect(entry.inferenceDetails.promptTokens).toBeGreaterThan(0);
      if (entry.sku.endsWith("-input-mtoken")) expect(Math.round(entry.units * 1e6)).toBe(entry.inferenceDetails.promptTokens);
    }
    expect(body.pagination).toEqual({ limit: 500, page: 1, total: 12, totalPages: 1 });
    expect(body.warningMessage).toContain("/billing/usage-history");
    expect(res.headers.get("deprecation")).toBe(`@${BILLING_USAGE_CUTOFF / 1000}`);
    expect(res.headers.get("link")).toBe('</api/v1/billing/usage-history>; rel="successor-version"');
    expect(res.headers.get("x-pagination-total")).toBe("12");
    expect(res.headers.get("x-pagination-total-pages")).toBe("1");
  });

  it("pages with limit and page, and the pages add up to the whole list", async () => {
    const all = (await json(await legacyUsage("limit=500"))).data;
    const pages: any[] = [];
    for (let page = 1; page <= 3; page++) {
      const res = await legacyUsage(`limit=5&page=${page}`);
      expect(res.headers.get("x-pagination-limit")).toBe("5");
      expect(res.headers.get("x-pagination-page")).toBe(String(page));
      expect(res.headers.get("x-pagination-total")).toBe("12");
      expect(res.headers.get("x-pagination-total-pages")).toBe("3");
      const body = await json(res);
      expect(body.pagination).toEqual({ limit: 5, page, total: 12, totalPages: 3 });
      pages.push(...body.data);
    }
    expect(pages).toEqual(all);
    expect((await json(await legacyUsage("limit=5&page=4"))).data).toEqual([]);
  });

  it("filters by currency and dates and sorts either way", async () => {
    const desc = (await json(await legacyUsage("limit=500"))).data;
    const asc = (await json(await legacyUsage("limit=500&sortOrder=asc"))).data;
    expect(asc).toEqual([...desc].reverse());
    const diem = (await json(await legacyUsage("currency=DIEM"))).data;
    expect(diem).toHaveLength(4);
    expect(diem.every((e: any) => e.currency === "DIEM")).toBe(true);
    const vcu = await json(await legacyUsage("currency=VCU"));
    expect(vcu.data).toEqual([]);
    expect(vcu.pagination.total).toBe(0);
    // Both ends inclusive: the third and fourth requests (the DIEM ones), two rows each.
    const window = await json(await legacyUsage(`startDate=${new Date(requestTimes[2]!).toISOString()}&endDate=${new Date(requestTimes[3]!).toISOString()}`));
    expect(window.data.map((e: any) => e.timestamp)).toEqual([requestTimes[3]!, requestTimes[3]!, requestTimes[2]!, requestTimes[2]!].map((t) => new Date(t).toISOString()));
    expect(window.data.every((e: any) => e.currency === "DIEM")).toBe(true);
  });

  it("answers CSV for Accept: text/csv with the same entries as the JSON", async () => {
    const query = "limit=7&page=1&sortOrder=asc";
    const jsonBody = await json(await legacyUsage(query));
    const res = await legacyUsage(query, "text/csv");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/csv/);
    expect(res.headers.get("content-disposition")).toMatch(/^attachment; filename=billing-usage-\d{8}T\d{9}Z\.csv$/);
    expect(res.headers.get("x-pagination-total")).toBe("12");
    expect(res.headers.get("deprecation")).toBeTruthy();
    const entries = csvEntries(await res.text(), true);
    expect(entries).toHaveLength(7);
    expect(entries).toEqual(jsonBody.data);
  });

  it("rejects bad parameters with the issue tree", async () => {
    for (const [query, field] of [
      ["limit=501", "limit"],
      ["limit=0", "limit"],
      ["page=0", "page"],
      ["sortOrder=up", "sortOrder"],
      ["currency=EUR", "currency"],
      ["startDate=yesterday", "startDate"],
      ["startDate=2026-02-31", "startDate"],
    ] as const) {
      const res = await legacyUsage(query);
      expect(res.status, query).toBe(400);
      expect((await json(res)).details[field]._errors.length, query).toBeGreaterThan(0);
    }
  });

  it("allows one request per minute per account: the second is a 429 with x-ratelimit headers", async () => {
    const caller = callerCreatedAt(OLD);
    const other = callerCreatedAt(OLD);
    tick(MINUTE);
    const first = await get("/billing/usage", caller);
    expect(first.status).toBe(200);
    expect(first.headers.get("x-ratelimit-limit-requests")).toBe("1");
    expect(first.headers.get("x-ratelimit-remaining-requests")).toBe("0");
    const second = await get("/billing/usage", caller);
    expect(second.status).toBe(429);
    const body = await json(second);
    expect(Object.keys(body)).toEqual(["error"]);
    expect(body.error).toMatch(/1 request per minute/);
    expect(Number(second.headers.get("x-ratelimit-reset-requests"))).toBe(Math.ceil((clock - (clock % MINUTE) + MINUTE) / 1000));
    // Another account is not held back by this one.
    expect((await get("/billing/usage", other)).status).toBe(200);
    tick(MINUTE);
    expect((await get("/billing/usage", caller)).status).toBe(200);
  });

  it("is 410 for accounts created on or after 2026-07-07, naming the replacement and the parameters to rename", async () => {
    const fresh = server.createKey();
    const res = await get("/billing/usage", { ...fresh });
    expect(res.status).toBe(410);
    const body = await json(res);
    expect(Object.keys(body)).toEqual(["error"]);
    for (const word of ["/billing/usage-history", "pageSize", "nextCursor", "startTimestamp", "endTimestamp"]) expect(body.error).toContain(word);
    expect(res.headers.get("link")).toContain("/billing/usage-history");
    expect(res.headers.get("sunset")).toBe("Tue, 07 Jul 2026 00:00:00 GMT");
    tick(MINUTE);
    expect((await get("/billing/usage", callerCreatedAt(BILLING_USAGE_CUTOFF))).status).toBe(410);
    expect((await get("/billing/usage", callerCreatedAt(BILLING_USAGE_CUTOFF - 1))).status).toBe(200);
  });
});

describe("GET /billing/usage-history", () => {
  /** Walks to the end; `between` runs after each page. */
  async function walk(caller: Caller, first: string, between: () => Promise<void> | void = () => {}) {
    const pages: any[][] = [];
    let res = await get(`/billing/usage-history?${first}`, caller);
    for (;;) {
      expect(res.status).toBe(200);
      const body = await json(res);
      pages.push(body.data);
      expect(res.headers.get("x-next-cursor")).toBe(body.nextCursor);
      if (body.nextCursor === null) break;
      expect(body.nextCursor).toMatch(/^[A-Za-z0-9_-]{1,512}$/);
      await between();
      res = await get(`/billing/usage-history?cursor=${body.nextCursor}`, caller);
    }
    return pages;
  }

  it("walks the ledger in ascending order with a cursor; the last page has nextCursor null", async () => {
    const pages = await walk(legacy, "pageSize=10");
    expect(pages.map((p) => p.length)).toEqual([10, 2]);
    expect(pages.flat()).toEqual(charges(legacy.accountId).map(expectedEntry));
    // Exactly pageSize rows left: the page that holds them is the last one.
    expect((await walk(legacy, "pageSize=12")).map((p) => p.length)).toEqual([12]);
  });

  let walker: Caller;
  const seeded: string[] = [];
  const BASE = T0 - 10 * DAY;

  /** Charges written straight to the ledger (as a concurrent settle would), USD and DIEM. */
  function insertCharge(caller: Caller, requestId: string, createdAt: number, currency: Currency = "USD", note: string | null = null) {
    server.db.transaction(() =>
      applyEntry(server.db, {
        accountId: caller.accountId,
        apiKeyId: caller.keyId,
        currency,
        deltaMicros: -1234,
        kind: "charge",
        requestId,
        sku: "tiny-chat-llm-output-mtoken",
        units: 0.000617,
        pricePerUnitUsd: 2,
        model: "tiny-chat",
        note,
        createdAt,
      }),
    )();
  }

  it("returns every row that existed when the walk began exactly once while rows are inserted between pages", async () => {
    walker = callerCreatedAt(clock, "walker");
    grantCredits(server.db, walker.accountId, "USD", toMicros(10), "test", clock);
    grantCredits(server.db, walker.accountId, "DIEM", toMicros(10), "test", clock);
    // 35 rows, three to a timestamp, so pages end inside runs of equal timestamps.
    for (let i = 0; i < 35; i++) {
      const id = `seed-${String(i).padStart(2, "0")}`;
      insertCharge(walker, id, BASE + Math.floor(i / 3) * 1000, i % 5 === 0 ? "DIEM" : "USD", i === 7 ? 'He said "hi", twice\nthen left' : null);
      seeded.push(id);
    }
    let n = 0;
    const pages = await walk(walker, "pageSize=10", async () => {
      // Before the position, at it, and after it (including a real request, settled now).
      insertCharge(walker, `late-${n++}`, BASE - 5000);
      insertCharge(walker, `late-${n++}`, BASE + 4000);
      insertCharge(walker, `late-${n++}`, BASE + 1_000_000);
      grantCredits(server.db, walker.accountId, "USD", toMicros(1), "top-up", clock);
      await chat(walker);
    });
    expect(pages.map((p) => p.length)).toEqual([10, 10, 10, 5]);
    const ids = pages.flat().map((e) => e.inferenceDetails.requestId);
    expect(ids).toEqual(seeded);
    expect(new Set(ids).size).toBe(35);
    const quoted = pages.flat()[7];
    expect(quoted.notes).toBe('He said "hi", twice\nthen left');
    // A new walk sees what was inserted meanwhile.
    expect((await walk(walker, "pageSize=1000")).flat()).toHaveLength(charges(walker.accountId).length);
  });

  it("filters by currency and a [startTimestamp, endTimestamp) window carried by the cursor", async () => {
    const rows = charges(walker.accountId);
    const diem = (await walk(walker, "currency=DIEM&pageSize=10")).flat();
    expect(diem).toEqual(rows.filter((r) => r.currency === "DIEM").map(expectedEntry));
    const start = BASE + 2000;
    const end = BASE + 9000;
    const windowed = await walk(walker, `startTimestamp=${new Date(start).toISOString()}&endTimestamp=${new Date(end).toISOString()}&pageSize=10`);
    const expected = rows.filter((r) => r.created_at >= start && r.created_at < end).map(expectedEntry);
    expect(expected.length).toBeGreaterThan(10);
    expect(windowed.flat()).toEqual(expected);
    expect(windowed.length).toBe(Math.ceil(expected.length / 10));
  });

  it("answers CSV for Accept: text/csv, the next cursor in x-next-cursor", async () => {
    const jsonPage = await json(await get("/billing/usage-history?pageSize=20", walker));
    const res = await get("/billing/usage-history?pageSize=20", walker, "text/csv");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/csv/);
    expect(res.headers.get("content-disposition")).toMatch(/^attachment; filename=billing-usage-history-\d{8}T\d{9}Z\.csv$/);
    expect(res.headers.get("x-next-cursor")).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(csvEntries(await res.text())).toEqual(jsonPage.data);
    // The note with a quote, a comma and a line break survived the CSV round trip.
    expect(jsonPage.data.map((e: any) => e.notes)).toContain('He said "hi", twice\nthen left');
  });

  it("rejects tampered, truncated, foreign and filtered cursors with a 400", async () => {
    const cursor = (await json(await get("/billing/usage-history?pageSize=10", walker))).nextCursor as string;
    expect((await get(`/billing/usage-history?cursor=${cursor}`, walker)).status).toBe(200);
    const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === "A" ? "B" : "A") + s.slice(i + 1);
    const bad = [flip(cursor, 5), flip(cursor, Math.floor(cursor.length / 2)), flip(cursor, cursor.length - 2), cursor.slice(0, -4), "AAAA"];
    for (const tampered of bad) {
      const res = await get(`/billing/usage-history?cursor=${tampered}`, walker);
      expect(res.status, tampered).toBe(400);
      const body = await json(res);
      expect(body.details.cursor._errors[0]).toMatch(/restart the walk/);
    }
    const foreign = await get(`/billing/usage-history?cursor=${cursor}`, legacy);
    expect(foreign.status).toBe(400);
    expect((await json(foreign)).error).toMatch(/another account/);
    const withFilter = await get(`/billing/usage-history?cursor=${cursor}&pageSize=20`, walker);
    expect(withFilter.status).toBe(400);
    expect((await json(withFilter)).details.pageSize._errors[0]).toMatch(/cursor/);
    expect((await get("/billing/usage-history?cursor=not%20base64!", walker)).status).toBe(400);
    expect((await get("/billing/usage-history?pageSize=9", walker)).status).toBe(400);
    expect((await get("/billing/usage-history?pageSize=1001", walker)).status).toBe(400);
    const backwards = await get(`/billing/usage-history?startTimestamp=2026-07-02T00:00:00Z&endTimestamp=2026-07-01T00:00:00Z`, walker);
    expect((await json(backwards)).details.endTimestamp._errors.length).toBe(1);
  });
});

describe("user and metadata of a request on its usage entries", () => {
  it("shows the user and metadata a chat or responses request sent, in the JSON and the CSV; requests without them have neither", async () => {
    const caller = callerCreatedAt(OLD, "labelled key");
    grantCredits(server.db, caller.accountId, "USD", toMicros(1), "test", clock);
    const ask = { model: "tiny-chat", messages: [{ role: "user", content: "hello there" }], max_tokens: 3, temperature: 0 };
    tick(MINUTE);
    const labelled = await post(server, "/chat/completions", { ...ask, user: "end-user-7", metadata: { team: "a,b", run: '"x"' } }, { key: caller.key });
    expect(labelled.status).toBe(200);
    const labelledId = ((await json(labelled)) as { id: string }).id;
    tick(MINUTE);
    const responses = await post(
      server,
      "/responses",
      { model: "tiny-chat", input: "hello there", max_output_tokens: 3, temperature: 0, metadata: { via: "responses" } },
      { key: caller.key },
    );
    expect(responses.status).toBe(200);
    tick(MINUTE);
    await chat(caller);

    const res = await get("/billing/usage-history", caller);
    expect(res.status).toBe(200);
    const entries = (await json(res)).data as { inferenceDetails: Record<string, unknown> }[];
    const requests = [...new Set(entries.map((e) => e.inferenceDetails.requestId as string))];
    expect(requests).toHaveLength(3);
    const detailsOf = (requestId: string) => entries.filter((e) => e.inferenceDetails.requestId === requestId).map((e) => e.inferenceDetails);
    const [first, second, third] = requests.map(detailsOf);
    // The chat's id is the request id without dashes.
    expect((first![0]!.requestId as string).replaceAll("-", "")).toBe(labelledId.replace("chatcmpl-", ""));
    for (const details of first!) {
      expect(details.user).toBe("end-user-7");
      expect(details.metadata).toEqual({ team: "a,b", run: '"x"' });
    }
    for (const details of second!) {
      expect(details).not.toHaveProperty("user");
      expect(details.metadata).toEqual({ via: "responses" });
    }
    for (const details of third!) {
      expect(details).not.toHaveProperty("user");
      expect(details).not.toHaveProperty("metadata");
    }

    const csv = await get("/billing/usage-history", caller, "text/csv");
    expect(csv.status).toBe(200);
    expect(csvEntries(await csv.text())).toEqual(entries);
  });

  it("refuses metadata that is not an object of short strings, naming the field", async () => {
    const caller = server.createKey();
    const ask = { model: "tiny-chat", messages: [{ role: "user", content: "hi" }], max_tokens: 1 };
    const tooMany = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, "v"]));
    for (const metadata of [{ a: 1 }, { a: "x".repeat(513) }, tooMany, "labels"]) {
      const res = await post(server, "/chat/completions", { ...ask, metadata }, { key: caller.key });
      expect(res.status).toBe(400);
      expect((await json(res)).details).toHaveProperty("metadata");
    }
    const res = await post(server, "/chat/completions", { ...ask, user: 7 }, { key: caller.key });
    expect(res.status).toBe(400);
    expect((await json(res)).details).toHaveProperty("user");
  });
});

describe("GET /billing/usage-analytics", () => {
  it("aggregates by date, model and key in the reference's shape, with totals equal to the ledger", async () => {
    const res = await get("/billing/usage-analytics?startDate=2026-11-14&endDate=2026-11-20", legacy);
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(Object.keys(body).sort()).toEqual(["byDate", "byKey", "byKeyDaily", "byModel", "byModelDaily", "lookback", "topKeyNames", "topModels"]);
    expect(body.lookback).toBe("2026-11-14:2026-11-20");

    const rows = charges(legacy.accountId);
    const usdMicros = rows.filter((r) => r.currency !== "DIEM").reduce((s, r) => s - r.delta_micros, 0);
    const diemMicros = rows.filter((r) => r.currency === "DIEM").reduce((s, r) => s - r.delta_micros, 0);
    expect(usdMicros).toBeGreaterThan(0);
    expect(diemMicros).toBeGreaterThan(0);
    const requests = new Map(rows.map((r) => [r.request_id, r]));
    const tokens = [...requests.values()].reduce((s, r) => s + r.prompt_tokens! + r.completion_tokens!, 0);

    expect(body.byDate.map((d: any) => d.date)).toEqual(["2026-11-20", "2026-11-19", "2026-11-18", "2026-11-17", "2026-11-16", "2026-11-15", "2026-11-14"]);
    expect(body.byDate[0]).toEqual({ date: "2026-11-20", USD: usdMicros / 1e6, DIEM: diemMicros / 1e6 });
    expect(body.byDate.slice(1).every((d: any) => d.USD === 0 && d.DIEM === 0)).toBe(true);

    expect(body.byModel).toHaveLength(1);
    const model = body.byModel[0];
    expect(model).toMatchObject({ modelName: "Tiny Chat", unitType: "tokens", modelType: "LLM", totalUsd: usdMicros / 1e6, totalDiem: diemMicros / 1e6, totalUnits: tokens });
    expect(model.breakdown.map((b: any) => b.type).sort()).toEqual(["Input", "Output"]);
    expect(model.breakdown.reduce((s: number, b: any) => s + b.units, 0)).toBe(tokens);
    expect(body.topModels).toEqual(["Tiny Chat"]);
    expect(body.byModelDaily).toHaveLength(7);
    expect(body.byModelDaily[6]).toEqual({ date: Date.UTC(2026, 10, 20), "Tiny Chat": (usdMicros + diemMicros) / 1e6 });
    expect(body.byModelDaily[0]).toEqual({ date: Date.UTC(2026, 10, 14), "Tiny Chat": 0 });

    expect(body.byKey).toEqual([{ apiKeyId: legacy.keyId, description: "legacy key", totalUsd: usdMicros / 1e6, totalDiem: diemMicros / 1e6, totalUnits: tokens }]);
    expect(body.topKeyNames).toEqual(["legacy key"]);
    expect(body.byKeyDaily[6]).toEqual({ date: Date.UTC(2026, 10, 20), "legacy key": (usdMicros + diemMicros) / 1e6 });
  });

  it("defaults to a 7-day lookback ending today, and validates its parameters", async () => {
    const body = await json(await get("/billing/usage-analytics", legacy));
    expect(body.lookback).toBe("7d");
    expect(body.byDate).toHaveLength(7);
    expect(body.byDate[0].date).toBe(new Date(clock).toISOString().slice(0, 10));
    expect((await json(await get("/billing/usage-analytics?lookback=1d", legacy))).byDate).toHaveLength(1);
    expect((await json(await get("/billing/usage-analytics?lookback=90d", legacy))).byDate).toHaveLength(90);
    for (const [query, field] of [
      ["lookback=91d", "lookback"],
      ["lookback=0d", "lookback"],
      ["lookback=week", "lookback"],
      ["startDate=2026-11-01", "endDate"],
      ["startDate=2026-11-10&endDate=2026-11-01", "endDate"],
      ["startDate=2026-01-01&endDate=2026-12-31", "endDate"],
      ["lookback=7d&startDate=2026-11-01&endDate=2026-11-02", "lookback"],
    ] as const) {
      const res = await get(`/billing/usage-analytics?${query}`, legacy);
      expect(res.status, query).toBe(400);
      expect((await json(res)).details[field]._errors.length, query).toBeGreaterThan(0);
    }
  });
});

describe("cursor expiry", () => {
  it("refuses a cursor older than 24 hours", async () => {
    const cursor = (await json(await get("/billing/usage-history?pageSize=10", legacy))).nextCursor as string;
    tick(25 * 3_600_000);
    const res = await get(`/billing/usage-history?cursor=${cursor}`, legacy);
    expect(res.status).toBe(400);
    expect((await json(res)).error).toMatch(/expired/);
  });
});
