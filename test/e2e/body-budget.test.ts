import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { type AddressInfo, connect, type Socket } from "node:net";
import { Writable } from "node:stream";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { bodyBudgetOf } from "../../src/http/bodyBudget.js";
import { createLogger } from "../../src/logger.js";
import { tinyWhisperEntry, post, startTestServer, tinyChatEntry, type TestServer } from "../helpers/testServer.js";

/**
 * Request bodies held at once are bounded (src/http/bodyBudget.ts). Bodies here are announced
 * and left unsent, as a caller that sends all but its last byte and waits would: the server
 * holds them until their connections close. With uploads of 1 MB the largest body a route takes
 * is 25 MB (a chat request's), so the budget is 28 MB and one caller's quarter 7 MB.
 */
let server: TestServer;
const searchUrl = () => `http://127.0.0.1:${(searchPeer.address() as AddressInfo).port}`;
/** The file server's unfinished answers (each finishes its file). */
const fileRequests: (() => void)[] = [];
/** What the server logged, a line a chunk. */
const logged: string[] = [];
/** A search provider for /augment/search, and a file server (their requests are answered by the tests that make them). */
let searchPeer: Server;
beforeAll(async () => {
  searchPeer = createServer((req, res) => {
    // A file to fetch: its headers and first kilobyte at once, the rest when the test says.
    if (req.url === "/file.wav") {
      res.writeHead(200, { "content-type": "audio/wav", "content-length": String(MB) });
      res.write(Buffer.alloc(1000));
      fileRequests.push(() => res.end(Buffer.alloc(MB - 1000)));
    }
  });
  await new Promise<void>((resolve) => searchPeer.listen(0, "127.0.0.1", resolve));
  server = await startTestServer({
    models: [tinyChatEntry(), tinyWhisperEntry()],
    config: { maxUploadMb: 1, maxBodyInFlight: 28_000_000, searchUrl: searchUrl(), webScraping: "on" },
    logger: createLogger("info", { destination: new Writable({ write: (chunk: Buffer, _encoding, done) => done(void logged.push(chunk.toString())) }) }),
  });
});
afterAll(async () => {
  await server.stop();
  searchPeer.close();
});

const MB = 1_000_000;
const open: Socket[] = [];
afterEach(async () => {
  for (const socket of open.splice(0)) socket.destroy();
  await waitUntil(() => held() === 0);
});

const held = (caller?: string) => bodyBudgetOf(server.app).held(caller);

async function waitUntil(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`still not so after 5 s (held: ${held()} bytes)`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

interface StalledBody {
  socket: Socket;
  /** The response's status line and headers, once the server answers without reading the body. */
  answer: Promise<{ status: number; head: string; body: string }>;
}

/** A POST that announces `bytes` of body (or sends it chunked) and sends one byte of it. */
function stalledBody(key: string, path: string, bytes: number | "chunked", contentType = "application/json"): StalledBody {
  const port = new URL(server.baseUrl).port;
  const socket = connect(Number(port), "127.0.0.1");
  open.push(socket);
  const length = bytes === "chunked" ? "Transfer-Encoding: chunked" : `Content-Length: ${bytes}`;
  socket.write(`POST /api/v1${path} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer ${key}\r\nContent-Type: ${contentType}\r\n${length}\r\n\r\n`);
  socket.write(bytes === "chunked" ? "1\r\n{\r\n" : "{");
  let received = "";
  const answer = new Promise<{ status: number; head: string; body: string }>((resolve) => {
    socket.on("data", (chunk: Buffer) => {
      received += chunk.toString("utf8");
      const end = received.indexOf("\r\n\r\n");
      if (end >= 0 && received.length > end + 4) resolve({ status: Number(received.split(" ")[1]), head: received.slice(0, end), body: received.slice(end + 4) });
    });
  });
  socket.on("error", () => {});
  return { socket, answer };
}

const chat = (key: string) => post(server, "/chat/completions", { model: "tiny-chat", max_tokens: 2, messages: [{ role: "user", content: "Hi" }] }, { key });

describe("request bodies in flight", () => {
  it("one caller holds at most a quarter of the budget: past it a 429 with Retry-After, while other callers go on", async () => {
    const a = server.createKey({ usd: 1 });
    stalledBody(a.key, "/chat/completions", 6 * MB);
    await waitUntil(() => held() === 6 * MB);
    expect(held(`auth:${a.keyId}`)).toBe(6 * MB);

    const second = await stalledBody(a.key, "/chat/completions", 2 * MB).answer;
    expect(second.status).toBe(429);
    expect(second.head.toLowerCase()).toContain("retry-after: 1");
    expect(JSON.parse(second.body).error).toMatch(/Too many request bodies in flight from this caller: 6 MB held \(bodies, and files fetched for them\) of the 7 MB/);
    // The refused body was never counted.
    expect(held()).toBe(6 * MB);

    const other = await chat(server.createKey({ usd: 1 }).key);
    expect(other.status).toBe(200);
  });

  it("a caller's first body is admitted even past its quarter, so the largest body a route takes is always readable", async () => {
    const a = server.createKey({ usd: 1 });
    stalledBody(a.key, "/chat/completions", 20 * MB);
    await waitUntil(() => held() === 20 * MB);
  });

  it("past the whole budget every caller gets a 503 with Retry-After; closed connections give their bytes back", async () => {
    const callers = Array.from({ length: 5 }, () => server.createKey({ usd: 1 }));
    const bodies = callers.slice(0, 4).map((caller) => stalledBody(caller.key, "/chat/completions", 6.5 * MB));
    await waitUntil(() => held() === 26 * MB);

    const refused = await stalledBody(callers[4]!.key, "/chat/completions", 6.5 * MB).answer;
    expect(refused.status).toBe(503);
    expect(refused.head.toLowerCase()).toContain("retry-after: 1");
    expect(JSON.parse(refused.body).error).toMatch(/reading other requests' bodies \(26 MB held; it reads at most 28 MB at once\)/);
    // Load shedding is logged as one warning without a stack, not as a failure.
    const line = logged.map((text) => JSON.parse(text)).find((entry) => entry.msg === "request refused");
    expect(line).toMatchObject({ level: 40, status: 503, path: "/api/v1/chat/completions" });
    expect(line.error).toMatch(/reading other requests' bodies/);
    expect(line.err).toBeUndefined();
    expect(logged.some((text) => text.includes('"msg":"request failed"'))).toBe(false);
    // A small body still fits in what is left.
    expect((await chat(callers[4]!.key)).status).toBe(200);

    bodies[0]!.socket.destroy();
    await waitUntil(() => held() === 19.5 * MB);
    stalledBody(callers[4]!.key, "/chat/completions", 6.5 * MB);
    await waitUntil(() => held() === 26 * MB);
  });

  it("a body read is counted until its response has ended, then released", async () => {
    // The search provider answers when the test says: meanwhile the request is in its route.
    let answerSearch!: () => void;
    const searching = new Promise<void>((resolve) => {
      searchPeer.once("request", (_req: IncomingMessage, res: ServerResponse) => {
        answerSearch = () => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ results: [] }));
        resolve();
      });
    });
    const caller = server.createKey({ usd: 1 });
    const body = JSON.stringify({ query: "lighthouse keepers", limit: 3 });
    const response = post(server, "/augment/search", body, { key: caller.key });
    await searching;
    expect(held(`auth:${caller.keyId}`)).toBe(Buffer.byteLength(body));
    answerSearch();
    expect((await response).status).toBe(200);
    await waitUntil(() => held() === 0);
  });

  it("a chunked body, whose size is not announced, holds its route's limit", async () => {
    const caller = server.createKey({ usd: 1 });
    stalledBody(caller.key, "/chat/completions", "chunked");
    await waitUntil(() => held() === 25 * MB);
    const refused = await stalledBody(server.createKey({ usd: 1 }).key, "/chat/completions", 6.5 * MB).answer;
    expect(refused.status).toBe(503);
  });

  it("an upload is admitted once, on a route that has both a JSON and a multipart parser too", async () => {
    const caller = server.createKey({ usd: 1 });
    const multipart = "multipart/form-data; boundary=x";
    stalledBody(caller.key, "/audio/transcriptions", 1.5 * MB, multipart);
    await waitUntil(() => held() === 1.5 * MB);
    stalledBody(caller.key, "/video/transcriptions", 1.5 * MB, multipart);
    await waitUntil(() => held() === 3 * MB);
    expect(held(`auth:${caller.keyId}`)).toBe(3 * MB);
  });

  it("a body announced past its route's limit holds nothing (the parser refuses it with a 413 once it has been discarded)", async () => {
    stalledBody(server.createKey({ usd: 1 }).key, "/chat/completions", 100 * MB);
    stalledBody(server.createKey({ usd: 1 }).key, "/chat/completions", 6.5 * MB);
    await waitUntil(() => held() === 6.5 * MB);
    const tooLarge = await post(server, "/audio/speech", { model: "tts-kokoro", input: "x".repeat(70_000) }, { key: server.createKey({ usd: 1 }).key });
    expect(tooLarge.status).toBe(413);
    expect(held()).toBe(6.5 * MB);
  });

  it("a file fetched from a URL the request names counts against its caller's share until the response ends", async () => {
    const caller = server.createKey({ usd: 1 });
    const fileUrl = `${searchUrl()}/file.wav`;
    const body = JSON.stringify({ url: fileUrl });
    const transcription = post(server, "/video/transcriptions", body, { key: caller.key });
    await waitUntil(() => fileRequests.length === 1);
    await waitUntil(() => held(`auth:${caller.keyId}`) === Buffer.byteLength(body) + MB);
    fileRequests.shift()!();
    expect((await transcription).status).toBeLessThan(500);
    await waitUntil(() => held() === 0);

    // With its share nearly spent by a body, the caller's fetch is refused: a 429, the file not read.
    stalledBody(caller.key, "/chat/completions", 6.5 * MB);
    await waitUntil(() => held() === 6.5 * MB);
    const refused = await post(server, "/video/transcriptions", body, { key: caller.key });
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { error: string }).error).toMatch(/Too many request bodies in flight from this caller/);
    await waitUntil(() => fileRequests.length === 1);
    fileRequests.shift()!();
    await waitUntil(() => held() === 6.5 * MB);
  });
});
