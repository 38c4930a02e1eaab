import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { DAY_MS } from "../../src/time.js";
import { createAccount } from "../../src/store/accounts.js";
import { createApiKey } from "../../src/store/apiKeys.js";
import { getBalances, listLedgerEntries } from "../../src/store/ledger.js";
import { countReservations } from "../../src/store/reservations.js";
import { listUsage } from "../../src/store/usage.js";
import { post, startTestServer, tinyChatEntry, type TestServer } from "../helpers/testServer.js";

/**
 * POST /responses takes chat's paid path: credits (402), rate limits (429), the usage row
 * (endpoint /responses), a disconnect billed once; stored responses expire; web search.
 */

/** $1 per million input tokens, $2 per million output tokens. */
const PRICED = { pricing: { input: { usd: 1, diem: 1 }, output: { usd: 2, diem: 2 } } };
let server: TestServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

function fundedKey(s: TestServer, usdMicros: number, overrides: Record<string, unknown> | null = null) {
  const account = createAccount(s.db, "funded");
  if (usdMicros > 0) s.credits.grant(account.id, "USD", usdMicros, "test");
  const { secret } = createApiKey(s.db, {
    accountId: account.id,
    description: "funded",
    keyType: "INFERENCE",
    rateLimitOverrides: overrides ? JSON.stringify(overrides) : null,
  });
  return { key: secret, accountId: account.id };
}

const ask = (max_output_tokens: number, extra: Record<string, unknown> = {}) => ({ model: "tiny-chat", input: "Hello", max_output_tokens, temperature: 0, ...extra });

describe("the paid path", () => {
  it("charges the usage, records endpoint /responses, and answers 402 when the most it can cost is not covered", async () => {
    server = await startTestServer({ models: [tinyChatEntry(PRICED)] });
    const { key, accountId } = fundedKey(server, 1_000_000);
    const res = await post(server, "/responses", ask(5), { key });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { usage: { input_tokens: number; output_tokens: number }; cost: { usd: number } };
    const expected = body.usage.input_tokens * 1 + body.usage.output_tokens * 2;
    expect(Math.round(body.cost.usd * 1e6)).toBe(expected);
    expect(res.headers.get("x-service-cost-usd")).not.toBeNull();
    expect(getBalances(server.db, accountId).USD).toBe(1_000_000 - expected);
    expect(listUsage(server.db, accountId)).toEqual([expect.objectContaining({ endpoint: "/responses", model: "tiny-chat", status: 200, completionTokens: 5 })]);

    const poor = fundedKey(server, 100);
    const refused = await post(server, "/responses", ask(500), { key: poor.key });
    expect(refused.status).toBe(402);
    expect(((await refused.json()) as { code: string }).code).toBe("INSUFFICIENT_BALANCE");
    // Refused before the stream opened, too.
    expect((await post(server, "/responses", ask(500, { stream: true }), { key: poor.key })).status).toBe(402);
    expect(getBalances(server.db, poor.accountId).USD).toBe(100);
    expect(countReservations(server.db)).toBe(0);

    // No credentials at all: the x402 discovery answer, as on chat.
    const anonymous = await post(server, "/responses", ask(5), { key: null });
    expect(anonymous.status).toBe(402);
    expect(((await anonymous.json()) as { x402Version?: number }).x402Version).toBeDefined();
  });

  it("answers 429 past the key's requests per minute", async () => {
    server = await startTestServer({ now: () => Date.parse("2026-05-01T10:00:10Z") });
    const { key } = fundedKey(server, 1_000_000, { "*": { rpm: 2 } });
    for (let i = 0; i < 2; i++) expect((await post(server, "/responses", ask(1), { key })).status).toBe(200);
    const refused = await post(server, "/responses", ask(1), { key });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("x-ratelimit-remaining-requests")).toBe("0");
  });

  it("bills a client that disconnects mid-stream once, for what was produced", async () => {
    server = await startTestServer({ models: [tinyChatEntry(PRICED)] });
    const { key, accountId } = fundedKey(server, 1_000_000);
    const res = await post(server, "/responses", ask(3000, { stream: true }), { key });
    const reader = res.body!.getReader();
    for (let i = 0; i < 6; i++) await reader.read();
    await reader.cancel();
    let rows = listUsage(server.db, accountId);
    for (let i = 0; i < 100 && rows.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 20));
      rows = listUsage(server.db, accountId);
    }
    await new Promise((r) => setTimeout(r, 100));
    rows = listUsage(server.db, accountId);
    expect(rows).toHaveLength(1);
    const [row] = rows;
    expect(row).toMatchObject({ endpoint: "/responses", status: 499 });
    expect(row!.completionTokens).toBeGreaterThan(0);
    expect(row!.completionTokens).toBeLessThan(3000);
    // Once: one ledger line per price (input, output) of the one request, none repeated.
    const charges = listLedgerEntries(server.db, { accountId, kind: "charge" });
    expect(charges.map((c) => c.sku).sort()).toEqual(["tiny-chat-llm-input-mtoken", "tiny-chat-llm-output-mtoken"]);
    expect(new Set(charges.map((c) => c.requestId)).size).toBe(1);
    expect(1_000_000 - getBalances(server.db, accountId).USD).toBe(row!.promptTokens * 1 + row!.completionTokens * 2);
    expect(countReservations(server.db)).toBe(0);
  });
});

describe("retention", () => {
  it("serves a stored response until --responses-retention-days have passed, then purges it", async () => {
    let now = Date.parse("2026-05-01T10:00:00Z");
    server = await startTestServer({ now: () => now, config: { responsesRetentionDays: 2 } });
    const client = server.openai();
    const old = await client.responses.create({ model: "tiny-chat", input: "Hi", max_output_tokens: 1 });
    now += 2 * DAY_MS - 1000;
    expect((await client.responses.retrieve(old.id)).id).toBe(old.id);
    now += 2000;
    await expect(client.responses.retrieve(old.id)).rejects.toMatchObject({ status: 404 });
    await expect(client.responses.create({ model: "tiny-chat", input: "Go on", previous_response_id: old.id, max_output_tokens: 1 })).rejects.toMatchObject({ status: 404 });
    // Storing the next response purges the expired one from the database.
    const fresh = await client.responses.create({ model: "tiny-chat", input: "Hi", max_output_tokens: 1 });
    const ids = server.db.prepare("SELECT id FROM responses").pluck().all();
    expect(ids).toEqual([fresh.id]);
  });
});

describe("web search", () => {
  let searchPeer: Server | undefined;
  afterEach(() => searchPeer?.close());

  async function searchProvider(): Promise<string> {
    searchPeer = createServer((_req, res) => {
      const results = [{ title: "Fredville Chronicle", url: "https://chronicle.example/mayor", content: "Fredville elects a new mayor." }];
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ number_of_results: 1, results }));
    });
    await new Promise<void>((resolve) => searchPeer!.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(searchPeer.address() as AddressInfo).port}`;
  }

  it("serves the web_search tool with the node's provider: a web_search_call item and url_citation annotations", async () => {
    server = await startTestServer({ config: { searchUrl: await searchProvider() } });
    // The tiny model cannot choose to cite: the format makes its whole answer the citation marker of source 0.
    const citeFirstSource = { type: "json_schema", name: "cite", schema: { type: "string", enum: ["[REF]0[/REF]"] } };
    const body = {
      model: "tiny-chat",
      input: "Who is the mayor of Fredville today?",
      tools: [{ type: "web_search" }],
      tool_choice: { type: "web_search" },
      text: { format: citeFirstSource },
      max_output_tokens: 30,
    };
    const res = await post(server, "/responses", body);
    expect(res.status).toBe(200);
    const response = (await res.json()) as { output: any[]; output_text: string };
    expect(response.output[0]).toMatchObject({ type: "web_search_call", status: "completed", action: { sources: [{ type: "url", url: "https://chronicle.example/mayor" }] } });
    const text = response.output.find((item) => item.type === "message").content[0];
    expect(text.text).toBe('"[REF]0[/REF]"');
    expect(text.annotations).toEqual([{ type: "url_citation", url: "https://chronicle.example/mayor", title: "Fredville Chronicle", start_index: 1, end_index: 13 }]);

    const stream = await post(server, "/responses", { ...body, stream: true, venice_parameters: { include_service_system_prompt: false } });
    const events = (await stream.text())
      .trim()
      .split("\n\n")
      .map((block) => JSON.parse(block.split("\n")[1]!.slice("data: ".length)) as { type: string; annotation?: unknown });
    const types = events.map((e) => e.type);
    expect(types).toContain("response.web_search_call.completed");
    const added = events.find((e) => e.type === "response.output_text.annotation.added");
    expect(added?.annotation).toMatchObject({ type: "url_citation", start_index: 1, end_index: 13 });
    expect(types.indexOf("response.output_text.annotation.added")).toBeLessThan(types.indexOf("response.output_text.done"));
    expect(types.at(-1)).toBe("response.completed");
  });
});
