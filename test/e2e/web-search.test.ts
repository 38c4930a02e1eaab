import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { post, startTestServer, type TestServer } from "../helpers/testServer.js";
import { listLedgerEntries } from "../../src/store/ledger.js";

/**
 * Web search, scraping and citations against loopback peers: a SearxNG-compatible JSON search
 * server that records the queries it receives, and a web page server.
 */

const RESULTS = [
  {
    title: "Freedonia - Wikipedia",
    url: "https://en.example.org/wiki/Freedonia",
    content: "Freedonia is a fictional country; its capital is Fredville.",
    publishedDate: "2024-05-01T10:00:00",
  },
  { title: "Duck Soup (1933)", url: "https://films.example.com/duck-soup", content: "Rufus T. Firefly becomes the leader of Freedonia.", publishedDate: null },
  { title: "Fredville travel guide", url: "https://travel.example.net/fredville", content: "Visit the old town of Fredville." },
];
const CITATIONS = [
  { title: RESULTS[0]!.title, url: RESULTS[0]!.url, content: RESULTS[0]!.content, date: RESULTS[0]!.publishedDate },
  { title: RESULTS[1]!.title, url: RESULTS[1]!.url, content: RESULTS[1]!.content },
  { title: RESULTS[2]!.title, url: RESULTS[2]!.url, content: RESULTS[2]!.content },
];

/** The SearxNG JSON API as Hearth uses it; `failWith` makes it answer an error status. */
const searx = { queries: [] as string[], failWith: 0 };
const pages = { hits: [] as string[] };

async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ server: Server; base: string }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

let searchPeer: Awaited<ReturnType<typeof listen>>;
let pagePeer: Awaited<ReturnType<typeof listen>>;
let withSearch: TestServer;
let withoutSearch: TestServer;

const ARTICLE = `<!doctype html><html><head><title>The Fredville Chronicle</title></head><body>
<nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<article><h1>Fredville elects a new mayor</h1>
<p>${"The citizens of Fredville went to the polls on Sunday and chose a new mayor after a long campaign. ".repeat(6)}</p>
<p>The new mayor promised to rebuild the old bridge over the river Fred.</p></article>
<script>trackVisitor()</script></body></html>`;

beforeAll(async () => {
  searchPeer = await listen((req, res) => {
    const url = new URL(req.url!, "http://peer");
    if (url.pathname !== "/search" || url.searchParams.get("format") !== "json") {
      res.writeHead(404).end();
      return;
    }
    searx.queries.push(url.searchParams.get("q") ?? "");
    if (searx.failWith < 0) {
      req.socket.destroy(); // the provider is down: the connection drops
      return;
    }
    if (searx.failWith) {
      res.writeHead(searx.failWith, { "content-type": "text/plain" }).end("engine overloaded");
      return;
    }
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ query: url.searchParams.get("q"), number_of_results: 3, results: RESULTS }));
  });
  pagePeer = await listen((req, res) => {
    pages.hits.push(req.url!);
    if (req.url === "/chronicle") res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(ARTICLE);
    else if (req.url === "/report.pdf") res.writeHead(200, { "content-type": "application/pdf" }).end("%PDF-1.4 not text");
    else res.writeHead(404, { "content-type": "text/html" }).end("<h1>Not found</h1>");
  });
  withSearch = await startTestServer({ config: { searchUrl: searchPeer.base, searchPriceUsd: 0.01, scrapePriceUsd: 0.02, webScraping: "on" } });
  withoutSearch = await startTestServer({ config: { webScraping: "on" } });
});
afterAll(async () => {
  await Promise.all([withSearch?.stop(), withoutSearch?.stop()]);
  searchPeer?.server.close();
  pagePeer?.server.close();
});

type Echo = { enable_web_search: string; enable_web_citations: boolean; enable_web_scraping: boolean; web_search_citations?: unknown[] } & Record<string, unknown>;
type Completion = OpenAI.ChatCompletion & { service_parameters: Echo; cost: { usd: number; diem: number } };

const QUESTION = "What is the capital of Freedonia?";
const ask = (content = QUESTION) => [{ role: "user" as const, content }];

/** A chat completion through the official client with service_parameters (an extension the client passes through). */
async function chat(server: TestServer, body: Record<string, unknown>, key?: string): Promise<Completion> {
  const request = { model: "tiny-chat", messages: ask(), max_tokens: 3, temperature: 0, ...body } as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming;
  return (await server.openai(key).chat.completions.create(request)) as Completion;
}

/** What the ledger charged an account, per sku. */
function charges(server: TestServer, accountId: string): Record<string, { units: number; usd: number }> {
  const bySku: Record<string, { units: number; micros: number }> = {};
  for (const row of listLedgerEntries(server.db, { accountId, kind: "charge" })) {
    const sku = (bySku[row.sku!] ??= { units: 0, micros: 0 });
    sku.units += row.units ?? 0;
    sku.micros -= row.deltaMicros;
  }
  return Object.fromEntries(Object.entries(bySku).map(([sku, total]) => [sku, { units: total.units, usd: total.micros / 1e6 }]));
}

describe("enable_web_search", () => {
  it("on: searches with the user's message, gives the model the results, echoes them as citations and bills the search", async () => {
    const { key, accountId } = withSearch.createKey({ usd: 5 });
    const before = searx.queries.length;
    const plain = await chat(withSearch, {}, key);
    expect(searx.queries.length).toBe(before); // off by default
    const searched = await chat(withSearch, { service_parameters: { enable_web_search: "on" } }, key);
    expect(searx.queries.slice(before)).toEqual([QUESTION]);
    // The numbered sources sit in the prompt.
    expect(searched.usage!.prompt_tokens).toBeGreaterThan(plain.usage!.prompt_tokens + 30);
    expect(searched.service_parameters.enable_web_search).toBe("on");
    expect(searched.service_parameters.web_search_citations).toEqual(CITATIONS);
    expect(plain.service_parameters.web_search_citations).toBeUndefined();
    expect(charges(withSearch, accountId)).toEqual({ "web-search": { units: 1, usd: 0.01 } });
    expect(searched.cost.usd).toBeCloseTo(0.01, 6);
  });

  it("enable_web_citations asks the model for [REF]n[/REF] citations and echoes the flag and the sources", async () => {
    const without = await chat(withSearch, { service_parameters: { enable_web_search: "on" } });
    const cited = await chat(withSearch, { service_parameters: { enable_web_search: "on", enable_web_citations: true } });
    expect(cited.service_parameters.enable_web_citations).toBe(true);
    expect(without.service_parameters.enable_web_citations).toBe(false);
    const citations = cited.service_parameters.web_search_citations as { url: string; title: string }[];
    expect(citations.map((c) => [c.url, c.title])).toEqual(RESULTS.map((r) => [r.url, r.title]));
    // The citation instruction is part of the prompt.
    expect(cited.usage!.prompt_tokens).toBeGreaterThan(without.usage!.prompt_tokens);
  });

  it("auto: searches only when the message asks for current information", async () => {
    const before = searx.queries.length;
    const smallTalk = await chat(withSearch, { messages: ask("Tell me a joke about ducks"), service_parameters: { enable_web_search: "auto" } });
    expect(searx.queries.length).toBe(before);
    expect(smallTalk.service_parameters.enable_web_search).toBe("auto");
    expect(smallTalk.service_parameters.web_search_citations).toBeUndefined();
    const news = await chat(withSearch, { messages: ask("What is the latest news from Freedonia?"), service_parameters: { enable_web_search: "auto" } });
    expect(searx.queries.slice(before)).toEqual(["What is the latest news from Freedonia?"]);
    expect(news.service_parameters.web_search_citations).toHaveLength(3);
  });

  it("the model suffix sets the same parameters (model:enable_web_search=on&enable_web_citations=true)", async () => {
    const before = searx.queries.length;
    const completion = await chat(withSearch, { model: "tiny-chat:enable_web_search=on&enable_web_citations=true" });
    expect(searx.queries.slice(before)).toEqual([QUESTION]);
    expect(completion.service_parameters).toMatchObject({ enable_web_search: "on", enable_web_citations: true, web_search_citations: CITATIONS });
  });

  it("a web_search tool lets the node decide, as auto does", async () => {
    const before = searx.queries.length;
    const completion = await chat(withSearch, { messages: ask("Weather in Fredville today?"), tools: [{ type: "web_search" }] });
    expect(searx.queries.slice(before)).toEqual(["Weather in Fredville today?"]);
    expect(completion.service_parameters.enable_web_search).toBe("auto");
  });

  it("the query drops URLs and is cut to 400 characters at a word", async () => {
    const before = searx.queries.length;
    const long = `${"freedonia history ".repeat(40)} see https://example.com/x`;
    await chat(withSearch, { messages: ask(long), service_parameters: { enable_web_search: "on" } });
    const query = searx.queries.at(-1)!;
    expect(searx.queries.length).toBe(before + 1);
    expect(query.length).toBeLessThanOrEqual(400);
    expect(query).not.toContain("http");
    expect(query.endsWith("freedonia") || query.endsWith("history")).toBe(true);
  });

  it("a provider failure is a clear 502 with on, and no search (200) with auto", async () => {
    searx.failWith = 503;
    try {
      const { key, accountId } = withSearch.createKey({ usd: 5 });
      const res = await post(withSearch, "/chat/completions", { model: "tiny-chat", messages: ask(), max_tokens: 2, service_parameters: { enable_web_search: "on" } }, { key });
      expect(res.status).toBe(502);
      const body = (await res.json()) as { error: string; code: string };
      expect(body.code).toBe("SEARCH_PROVIDER_FAILED");
      expect(body.error).toMatch(/web search failed.*HTTP 503/i);
      const auto = await chat(withSearch, { messages: ask("latest Freedonia news"), service_parameters: { enable_web_search: "auto" } }, key);
      expect(auto.service_parameters.web_search_citations).toBeUndefined();
      expect(charges(withSearch, accountId)["web-search"]).toBeUndefined();
      searx.failWith = -1;
      const down = await post(withSearch, "/chat/completions", { model: "tiny-chat", messages: ask(), stream: true, service_parameters: { enable_web_search: "on" } }, { key });
      expect(down.status).toBe(502);
      expect(((await down.json()) as { error: string }).error).toMatch(/web search failed: the search provider could not be reached/i);
    } finally {
      searx.failWith = 0;
    }
  });
});

describe("search results in the response", () => {
  it("stream: the citations ride on the first chunk; include_search_results_in_stream emits the results first", async () => {
    const client = withSearch.openai();
    const collect = async (params: Record<string, unknown>) => {
      const stream = await client.chat.completions.create({
        model: "tiny-chat",
        messages: ask(),
        max_tokens: 3,
        stream: true,
        service_parameters: params,
      } as unknown as OpenAI.ChatCompletionCreateParamsStreaming);
      const chunks: Record<string, any>[] = [];
      for await (const chunk of stream) chunks.push(chunk as unknown as Record<string, any>);
      return chunks;
    };
    const plain = await collect({ enable_web_search: "on" });
    expect(plain[0]!.choices[0].delta.role).toBe("assistant");
    expect(plain[0]!.service_parameters.web_search_citations).toEqual(CITATIONS);
    expect(plain.some((c) => "service_search_results" in c)).toBe(false);

    const withResults = await collect({ enable_web_search: "on", include_search_results_in_stream: true });
    expect(withResults[0]!.choices).toEqual([]);
    expect(withResults[0]!.service_search_results).toEqual(CITATIONS);
    expect(withResults[1]!.choices[0].delta.role).toBe("assistant");
    expect(withResults[1]!.service_parameters).toMatchObject({ include_search_results_in_stream: true, web_search_citations: CITATIONS });
    expect(withResults.at(-1)!.choices[0].finish_reason).not.toBeNull();
  });

  it("return_search_results_as_documents adds a service_web_search_documents tool call carrying the results", async () => {
    const completion = await chat(withSearch, { service_parameters: { enable_web_search: "on", return_search_results_as_documents: true } });
    expect(completion.service_parameters.return_search_results_as_documents).toBe(true);
    const calls = completion.choices[0]!.message.tool_calls ?? [];
    const documents = calls.filter((c) => c.type === "function" && c.function.name === "service_web_search_documents");
    expect(documents).toHaveLength(1);
    const call = documents[0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(call.id).toMatch(/^call_/);
    expect(JSON.parse(call.function.arguments)).toEqual({ documents: CITATIONS });

    // The same call arrives as tool-call deltas in a stream.
    const stream = await withSearch.openai().chat.completions.create({
      model: "tiny-chat",
      messages: ask(),
      max_tokens: 3,
      stream: true,
      service_parameters: { enable_web_search: "on", return_search_results_as_documents: true },
    } as unknown as OpenAI.ChatCompletionCreateParamsStreaming);
    let name = "";
    let args = "";
    for await (const chunk of stream) {
      for (const delta of chunk.choices[0]?.delta.tool_calls ?? []) {
        name += delta.function?.name ?? "";
        args += delta.function?.arguments ?? "";
      }
    }
    expect(name).toBe("service_web_search_documents");
    expect(JSON.parse(args)).toEqual({ documents: CITATIONS });
  });

  it("without the flags, no tool call and no results chunk are added", async () => {
    const completion = await chat(withSearch, { service_parameters: { enable_web_search: "on" } });
    expect(completion.choices[0]!.message.tool_calls ?? []).toEqual([]);
    expect(completion.service_parameters.return_search_results_as_documents).toBe(false);
    expect(completion.service_parameters.include_search_results_in_stream).toBe(false);
  });
});

describe("enable_web_scraping", () => {
  it("scrapes the message's URLs, bills only the pages read, and bypasses web search", async () => {
    const { key, accountId } = withSearch.createKey({ usd: 5 });
    const searches = searx.queries.length;
    pages.hits.length = 0;
    const good = `${pagePeer.base}/chronicle`;
    const missing = `${pagePeer.base}/gone`;
    const pdf = `${pagePeer.base}/report.pdf`;
    const message = `Summarise ${good}, ${missing} and (${pdf}).`;
    const plain = await chat(withSearch, { messages: ask(message) }, key);
    const scraped = await chat(withSearch, { messages: ask(message), service_parameters: { enable_web_scraping: true, enable_web_search: "on" } }, key);
    expect(pages.hits.sort()).toEqual(["/chronicle", "/gone", "/report.pdf"]);
    expect(searx.queries.length).toBe(searches);
    expect(scraped.service_parameters.enable_web_scraping).toBe(true);
    const citations = scraped.service_parameters.web_search_citations as { title: string; url: string; content: string }[];
    expect(citations.map((c) => [c.title, c.url])).toEqual([["The Fredville Chronicle", good]]);
    expect(citations[0]!.content).toContain("rebuild the old bridge");
    expect(citations[0]!.content).not.toMatch(/trackVisitor|About/);
    expect(scraped.usage!.prompt_tokens).toBeGreaterThan(plain.usage!.prompt_tokens + 100);
    expect(charges(withSearch, accountId)).toEqual({ "web-scrape": { units: 1, usd: 0.02 } });
    expect(scraped.cost.usd).toBeCloseTo(0.02, 6);
  });

  it("reads at most 5 URLs, and falls back to web search when no page could be read", async () => {
    pages.hits.length = 0;
    const urls = Array.from({ length: 7 }, (_, i) => `${pagePeer.base}/missing-${i}`);
    const before = searx.queries.length;
    const completion = await chat(withSearch, { messages: ask(`Compare ${urls.join(" ")}`), service_parameters: { enable_web_scraping: true, enable_web_search: "on" } });
    expect(pages.hits.sort()).toEqual(
      urls
        .slice(0, 5)
        .map((u) => new URL(u).pathname)
        .sort(),
    );
    expect(searx.queries.slice(before)).toEqual(["Compare"]);
    expect(completion.service_parameters.web_search_citations).toEqual(CITATIONS);
  });
});

describe("a node without a search provider", () => {
  it("on: 400 naming service_parameters.enable_web_search", async () => {
    const { key } = withoutSearch.createKey({ usd: 1 });
    const res = await post(withoutSearch, "/chat/completions", { model: "tiny-chat", messages: ask(), service_parameters: { enable_web_search: "on" } }, { key });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: string; details: any };
    expect(body.details.service_parameters.enable_web_search._errors[0]).toMatch(/no search provider/);
    await expect(chat(withoutSearch, { model: "tiny-chat:enable_web_search=on" }, key)).rejects.toBeInstanceOf(OpenAI.BadRequestError);
  });

  it("auto: answers without searching", async () => {
    const completion = await chat(withoutSearch, { messages: ask("latest news today?"), service_parameters: { enable_web_search: "auto" } });
    expect(completion.choices).toHaveLength(1);
    expect(completion.service_parameters.enable_web_search).toBe("auto");
    expect(completion.service_parameters.web_search_citations).toBeUndefined();
  });

  it("scraping still works (it needs no provider)", async () => {
    const completion = await chat(withoutSearch, { messages: ask(`Read ${pagePeer.base}/chronicle`), service_parameters: { enable_web_scraping: true } });
    expect((completion.service_parameters.web_search_citations as { url: string }[]).map((c) => c.url)).toEqual([`${pagePeer.base}/chronicle`]);
  });
});

describe("GET /models", () => {
  it("text models report supportsWebSearch exactly when the node has a search provider", async () => {
    const capabilities = async (node: TestServer) => {
      const res = await fetch(`${node.baseUrl}/models/tiny-chat`);
      return ((await res.json()) as { model_spec: { capabilities: Record<string, unknown> } }).model_spec.capabilities;
    };
    expect((await capabilities(withSearch)).supportsWebSearch).toBe(true);
    expect((await capabilities(withoutSearch)).supportsWebSearch).toBe(false);
  });
});

describe("a node that does not allow scraping (the default)", () => {
  it("enable_web_scraping: 400 naming the field, and nothing is fetched", async () => {
    const closed = await startTestServer();
    try {
      const { key } = closed.createKey({ usd: 1 });
      const hits = pages.hits.length;
      const res = await post(
        closed,
        "/chat/completions",
        { model: "tiny-chat", messages: ask(`Read ${pagePeer.base}/chronicle`), service_parameters: { enable_web_scraping: true } },
        { key },
      );
      expect(res.status).toBe(400);
      const body = (await res.json()) as { details: any };
      expect(body.details.service_parameters.enable_web_scraping._errors[0]).toMatch(/--web-scraping on/);
      expect(pages.hits.length).toBe(hits);
    } finally {
      await closed.stop();
    }
  });
});

describe("x search", () => {
  it("enable_x_search and x_search tools are accepted and reported unsupported", async () => {
    const client = withSearch.openai();
    const viaParam = await client.chat.completions
      .create({ model: "tiny-chat", messages: ask(), max_tokens: 2, service_parameters: { enable_x_search: true } } as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming)
      .withResponse();
    expect(viaParam.response.status).toBe(200);
    expect(viaParam.response.headers.get("x-service-unsupported-parameters")).toBe("enable_x_search");
    const viaTool = await client.chat.completions
      .create({ model: "tiny-chat", messages: ask(), max_tokens: 2, tools: [{ type: "x_search" }] } as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming)
      .withResponse();
    expect(viaTool.response.headers.get("x-service-unsupported-parameters")).toBe("enable_x_search");
    expect((viaTool.data as Completion).service_parameters.enable_x_search).toBe(false);
  });
});
