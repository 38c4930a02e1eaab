import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getBalances, listLedgerEntries } from "../../src/store/ledger.js";
import { listUsage } from "../../src/store/usage.js";
import { makeDocx, makePdf } from "../helpers/documents.js";
import { post, startTestServer, type TestServer } from "../helpers/testServer.js";

/**
 * POST /augment/search, /augment/scrape and /augment/text-parser against loopback peers: a
 * SearxNG-compatible JSON search server and a web page server, with real documents.
 */

const HITS = Array.from({ length: 25 }, (_, i) => ({
  title: `Result ${i + 1}`,
  url: `https://example.org/page/${i + 1}`,
  content: `Snippet number ${i + 1} about lighthouses.`,
  publishedDate: i === 0 ? "2025-03-01T08:00:00" : null,
}));
const ARTICLE = `<!doctype html><html><head><title>Lighthouse keepers</title></head><body>
<nav><a href="/">Home</a></nav><article><h1>Lighthouse keepers</h1>
<p>${"Keepers trimmed the wicks and wound the clockwork every night of the year. ".repeat(5)}</p>
<p>The last keeper left the rock in 1998.</p></article><script>track()</script></body></html>`;

const searx = { queries: [] as string[], delayMs: 0 };

async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ server: Server; base: string }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

let searchPeer: Awaited<ReturnType<typeof listen>>;
let pagePeer: Awaited<ReturnType<typeof listen>>;
let node: TestServer;
let bare: TestServer;

beforeAll(async () => {
  searchPeer = await listen((req, res) => {
    const url = new URL(req.url!, "http://peer");
    searx.queries.push(url.searchParams.get("q") ?? "");
    setTimeout(() => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ results: HITS })), searx.delayMs);
  });
  pagePeer = await listen((req, res) => {
    if (req.url === "/article") res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(ARTICLE);
    else if (req.url === "/image") res.writeHead(200, { "content-type": "image/png" }).end(Buffer.alloc(64));
    else res.writeHead(404).end();
  });
  node = await startTestServer({ config: { searchUrl: searchPeer.base, searchPriceUsd: 0.01, scrapePriceUsd: 0.02, textParserPriceUsd: 0.005, webScraping: "on" } });
  bare = await startTestServer();
});
afterAll(async () => {
  await Promise.all([node.stop(), bare.stop()]);
  searchPeer.server.close();
  pagePeer.server.close();
});

const usd = (server: TestServer, accountId: string) => getBalances(server.db, accountId).USD;

describe("POST /augment/search", () => {
  it("answers the provider's shape, at most `limit` results, and charges one search", async () => {
    const { key, accountId } = node.createKey({ usd: 1 });
    const res = await post(node, "/augment/search", { query: "lighthouse keepers", limit: 3, search_provider: "brave" }, { key });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { query: string; results: { title: string; url: string; content: string; date: string }[] };
    expect(body.query).toBe("lighthouse keepers");
    expect(body.results).toEqual([
      { title: "Result 1", url: "https://example.org/page/1", content: "Snippet number 1 about lighthouses.", date: "2025-03-01T08:00:00" },
      { title: "Result 2", url: "https://example.org/page/2", content: "Snippet number 2 about lighthouses.", date: "" },
      { title: "Result 3", url: "https://example.org/page/3", content: "Snippet number 3 about lighthouses.", date: "" },
    ]);
    expect(searx.queries.at(-1)).toBe("lighthouse keepers");
    expect(res.headers.get("x-service-unsupported-parameters")).toBe("search_provider");
    expect(Number(res.headers.get("x-service-cost-usd"))).toBe(0.01);
    expect(res.headers.get("x-ratelimit-limit-requests")).toBe("60");
    expect(usd(node, accountId)).toBe(990_000);
    expect(listUsage(node.db, accountId).map((u) => [u.endpoint, u.model, u.status])).toEqual([["/augment/search", "web-search", 200]]);
    // The default limit is 10; the maximum 20.
    const all = (await (await post(node, "/augment/search", { query: "more" }, { key })).json()) as { results: unknown[] };
    expect(all.results).toHaveLength(10);
  });

  it("refuses bad input with a 400 naming the field, and answers 503 naming the setting on a node without a provider", async () => {
    for (const [body, field] of [
      [{ query: "" }, "query"],
      [{ query: "x".repeat(401) }, "query"],
      [{ query: "ok", limit: 21 }, "limit"],
      [{ query: "ok", search_provider: "yahoo" }, "search_provider"],
      [{ query: "ok", extra: true }, "extra"],
    ] as const) {
      const res = await post(node, "/augment/search", body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(await res.text()).toContain(field);
    }
    const { key, accountId } = bare.createKey({ usd: 1 });
    const res = await post(bare, "/augment/search", { query: "anything" }, { key });
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: string }).error).toContain("--search-url");
    expect(usd(bare, accountId)).toBe(1_000_000);
  });

  it("is refused without a key as chat is (x402 discovery), with 402 without credit; a client that leaves is not charged", async () => {
    const anonymous = await post(node, "/augment/search", { query: "q" }, { key: null });
    expect(anonymous.status).toBe((await post(node, "/chat/completions", { model: "tiny-chat", messages: [] }, { key: null })).status);
    const broke = node.createKey({ usd: 0 });
    expect((await post(node, "/augment/search", { query: "q" }, { key: broke.key })).status).toBe(402);

    const { key, accountId } = node.createKey({ usd: 1 });
    searx.delayMs = 500;
    try {
      const abort = new AbortController();
      const pending = fetch(`${node.baseUrl}/augment/search`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ query: "slow" }),
        signal: abort.signal,
      }).catch((e: unknown) => e);
      await new Promise((r) => setTimeout(r, 150));
      abort.abort();
      await pending;
      await new Promise((r) => setTimeout(r, 600));
    } finally {
      searx.delayMs = 0;
    }
    expect(usd(node, accountId)).toBe(1_000_000);
    expect(listLedgerEntries(node.db, { accountId }).filter((e) => e.kind === "charge")).toEqual([]);
    expect(listUsage(node.db, accountId).map((u) => u.status)).toEqual([499]);
  });

  it("holds to the key's augment rate limit (an operator's override through PATCH /api_keys makes it small enough to reach)", async () => {
    const { key, keyId } = node.createKey({ usd: 1, operator: true });
    const patch = await fetch(`${node.baseUrl}/api_keys`, {
      method: "PATCH",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ id: keyId, rateLimits: { augment: { rpm: 2 } } }),
    });
    expect(patch.status, await patch.clone().text()).toBe(200);
    const statuses: number[] = [];
    await node.withClockStopped(async () => {
      for (let i = 0; i < 3; i++) statuses.push((await post(node, "/augment/search", { query: `q${i}` }, { key })).status);
    });
    expect(statuses).toEqual([200, 200, 429]);
  });
});

describe("POST /augment/scrape", () => {
  it("returns the page's readable text as markdown and charges one page", async () => {
    const { key, accountId } = node.createKey({ usd: 1 });
    const res = await post(node, "/augment/scrape", { url: `${pagePeer.base}/article` }, { key });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { url: string; content: string; format: string };
    expect(body.url).toBe(`${pagePeer.base}/article`);
    expect(body.format).toBe("markdown");
    expect(body.content.startsWith("# Lighthouse keepers\n\n")).toBe(true);
    expect(body.content).toContain("The last keeper left the rock in 1998.");
    expect(body.content).not.toContain("track()");
    expect(usd(node, accountId)).toBe(980_000);
  });

  it("a page that cannot be read is a 422 saying why, and free; bad URLs are 400s; off unless the operator opts in", async () => {
    const { key, accountId } = node.createKey({ usd: 1 });
    for (const [path, reason] of [
      ["/missing", "HTTP 404"],
      ["/image", "unsupported content type"],
    ]) {
      const res = await post(node, "/augment/scrape", { url: `${pagePeer.base}${path}` }, { key });
      expect(res.status).toBe(422);
      expect(((await res.json()) as { error: string }).error).toContain(reason);
    }
    expect(usd(node, accountId)).toBe(1_000_000);
    for (const url of ["not a url", "ftp://example.org/file", "file:///etc/passwd"]) {
      const res = await post(node, "/augment/scrape", { url }, { key });
      expect(res.status, url).toBe(400);
      expect(await res.text()).toContain("url");
    }
    const res = await post(bare, "/augment/scrape", { url: `${pagePeer.base}/article` });
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: string }).error).toContain("--web-scraping on");
  });
});

describe("POST /augment/text-parser", () => {
  const upload = (server: TestServer, file: Blob | undefined, filename: string, fields: Record<string, string> = {}, key = server.adminKey) => {
    const form = new FormData();
    if (file) form.set("file", file, filename);
    for (const [name, value] of Object.entries(fields)) form.set(name, value);
    return fetch(`${server.baseUrl}/augment/text-parser`, { method: "POST", headers: { authorization: `Bearer ${key}` }, body: form });
  };

  it("extracts a DOCX and a PDF with a token count, or the text alone; charges each document", async () => {
    const { key, accountId } = node.createKey({ usd: 1 });
    const docx = await makeDocx(["The tide tables for March.", "High water at 06:12."]);
    const res = await upload(node, new Blob([docx]), "tides.docx", {}, key);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { text: string; tokens: number };
    expect(body.text).toContain("The tide tables for March.");
    expect(body.text).toContain("High water at 06:12.");
    // Counted by the default text model's tokenizer: more than one token, fewer than characters.
    expect(body.tokens).toBeGreaterThan(5);
    expect(body.tokens).toBeLessThan(body.text.length);

    const pdf = await makePdf(["Keeper's log, 3 March"]);
    const plain = await upload(node, new Blob([pdf]), "log.pdf", { response_format: "text" }, key);
    expect(plain.status).toBe(200);
    expect(plain.headers.get("content-type")).toMatch(/^text\/plain/);
    expect(await plain.text()).toContain("Keeper's log, 3 March");
    expect(usd(node, accountId)).toBe(1_000_000 - 2 * 5_000);
    expect(listUsage(node.db, accountId).map((u) => u.endpoint)).toEqual(["/augment/text-parser", "/augment/text-parser"]);
  });

  it("refuses no file (400 naming file), an unknown format (415 saying which types it reads), a bad response_format or text past the character limit (400), and is free then", async () => {
    const { key, accountId } = node.createKey({ usd: 1 });
    const none = await upload(node, undefined, "", { response_format: "json" }, key);
    expect(none.status).toBe(400);
    expect(await none.text()).toContain("file");
    const image = await upload(node, new Blob([Buffer.from("GIF89a\x01\x00\x01\x00\x00\x00\x00;", "latin1")], { type: "image/gif" }), "dot.gif", {}, key);
    expect(image.status).toBe(415);
    expect(((await image.json()) as { error: string }).error).toContain("PDF, DOCX");
    const format = await upload(node, new Blob(["hello"]), "a.txt", { response_format: "xml" }, key);
    expect(format.status).toBe(400);
    expect(await format.text()).toContain("response_format");
    // Text past the node's per-file character limit (1,000,000 by default), as chat's file parts.
    const long = await upload(node, new Blob(["word ".repeat(220_000)]), "long.txt", {}, key);
    expect(long.status).toBe(400);
    expect(((await long.json()) as { error: string }).error).toBe("file: the file's text is 1099999 characters long; this node reads at most 1000000 characters per file");
    expect(usd(node, accountId)).toBe(1_000_000);
  });
});
