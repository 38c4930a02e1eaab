import { request } from "node:http";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { whilePoolBusy } from "../helpers/poolBusy.js";
import { startTestServer, tinyChatEntry, tinyKokoroEntry, type TestServer } from "../helpers/testServer.js";

let server: TestServer;

beforeAll(async () => {
  // Three text models so GET /models is well over the 1 KB threshold.
  server = await startTestServer({ models: [tinyChatEntry(), tinyChatEntry({ id: "tiny-chat-2" }), tinyChatEntry({ id: "tiny-chat-3" }), tinyKokoroEntry()] });
});
afterAll(() => server.stop());

interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** Milliseconds after the request at which each piece of the body arrived. */
  arrivals: number[];
}

/** A raw HTTP exchange: no client-side decompression, so the bytes are what the server sent. `path` is under the API's base, or a whole URL. */
function raw(method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<RawResponse> {
  const url = new URL(path.startsWith("http") ? path : `${server.baseUrl}${path}`);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers: { authorization: `Bearer ${server.adminKey}`, ...(body ? { "content-type": "application/json" } : {}), ...headers } }, (res) => {
      const pieces: Buffer[] = [];
      const arrivals: number[] = [];
      res.on("data", (piece: Buffer) => {
        pieces.push(piece);
        arrivals.push(performance.now() - started);
      });
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(pieces), arrivals }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body ? JSON.stringify(body) : undefined);
  });
}

const decoders = { gzip: gunzipSync, br: brotliDecompressSync } as const;
// Log probabilities make the completion large enough to be worth compressing.
const bigCompletion = { model: "tiny-chat", messages: [{ role: "user", content: "Hello" }], max_tokens: 24, temperature: 0, logprobs: true, top_logprobs: 5 };

describe("response compression", () => {
  for (const encoding of ["gzip", "br"] as const) {
    it(`compresses a non-streaming chat completion with ${encoding}`, async () => {
      const res = await raw("POST", "/chat/completions", { "accept-encoding": encoding }, bigCompletion);
      expect(res.status).toBe(200);
      expect(res.headers["content-encoding"]).toBe(encoding);
      expect(String(res.headers.vary)).toMatch(/accept-encoding/i);
      const json = decoders[encoding](res.body).toString("utf8");
      const completion = JSON.parse(json) as { object: string; choices: { logprobs: { content: unknown[] } }[] };
      expect(completion.object).toBe("chat.completion");
      expect(completion.choices[0]!.logprobs.content.length).toBeGreaterThan(0);
      expect(res.body.length).toBeLessThan(Buffer.byteLength(json));
    });

    it(`compresses GET /models with ${encoding}`, async () => {
      const res = await raw("GET", "/models", { "accept-encoding": encoding });
      expect(res.headers["content-encoding"]).toBe(encoding);
      const list = JSON.parse(decoders[encoding](res.body).toString("utf8")) as { data: { id: string }[] };
      expect(list.data.map((m) => m.id)).toContain("tiny-chat-3");
    });
  }

  it("compresses a JSON answer without libuv's thread pool (which llama.cpp's decodes hold): it arrives while every pool thread is busy", async () => {
    // The first listing of a model file reads its chat template (file system: the pool); the ones after do not.
    await raw("GET", "/models", {});
    const { result: res, beforeAnyFreed } = await whilePoolBusy(() => raw("GET", "/models", { "accept-encoding": "gzip" }));
    expect(res.headers["content-encoding"]).toBe("gzip");
    expect(JSON.parse(gunzipSync(res.body).toString("utf8"))).toHaveProperty("data");
    // Through zlib's streams the answer would have waited for a pool thread.
    expect(beforeAnyFreed).toBe(true);
  });

  it("serves the web console's files, compressed, while every pool thread is busy (from memory: no file reads)", async () => {
    const { result: page, beforeAnyFreed } = await whilePoolBusy(async () => {
      // index.html is under the 1 KB threshold: it comes as is.
      const index = await raw("GET", `${server.url}/`, { accept: "text/html", "accept-encoding": "gzip" });
      const html = index.body.toString("utf8");
      const script = await raw("GET", `${server.url}${/src="(\/assets\/[^"]+\.js)"/.exec(html)![1]!}`, { "accept-encoding": "gzip" });
      return { index, html, script };
    });
    expect(beforeAnyFreed).toBe(true);
    expect(page.index.status).toBe(200);
    expect(page.html).toContain('<div id="app">');
    expect(page.script.headers["content-type"]).toMatch(/javascript/);
    expect(page.script.headers["content-encoding"]).toBe("gzip");
    expect(gunzipSync(page.script.body).length).toBeGreaterThan(page.script.body.length);
  });

  it("leaves responses below 1 KB and callers that ask for no encoding alone", async () => {
    const small = await raw("GET", "/models/nothing-here", { "accept-encoding": "gzip, br" });
    expect(small.status).toBe(404);
    expect(small.headers["content-encoding"]).toBeUndefined();
    expect((JSON.parse(small.body.toString("utf8")) as { error: string }).error).toMatch(/does not exist/);
    const identity = await raw("GET", "/models", {});
    expect(identity.headers["content-encoding"]).toBeUndefined();
    expect(JSON.parse(identity.body.toString("utf8"))).toHaveProperty("data");
  });

  it("never compresses a chat stream: it arrives uncompressed, event by event", async () => {
    const res = await raw("POST", "/chat/completions", { "accept-encoding": "gzip, br" }, { ...bigCompletion, max_tokens: 40, stream: true });
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^text\/event-stream/);
    expect(res.headers["content-encoding"]).toBeUndefined();
    const events = res.body
      .toString("utf8")
      .split("\n\n")
      .filter((e) => e.startsWith("data: "));
    expect(events.at(-1)).toBe("data: [DONE]");
    // Tokens leave as they are made: many events, in separate arrivals spread over the generation, not
    // one buffered burst (on a busy machine a few events may share one socket read, so not one per event).
    expect(events.length).toBeGreaterThan(10);
    expect(res.arrivals.length).toBeGreaterThan(2);
    expect(res.arrivals.at(-1)! - res.arrivals[0]!).toBeGreaterThan(5);
  });

  it("never compresses an audio stream", async () => {
    const res = await raw(
      "POST",
      "/audio/speech",
      { "accept-encoding": "gzip" },
      { model: "tts-kokoro", voice: "af_heart", input: "One. Two. Three.", response_format: "wav", streaming: true },
    );
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^audio\//);
    expect(res.headers["content-encoding"]).toBeUndefined();
    expect(res.body.subarray(0, 4).toString("latin1")).toBe("RIFF");
  });

  it("the openai client (which asks for compression) gets compressed answers and uncompressed streams", async () => {
    const client = server.openai();
    const { data, response } = await client.chat.completions.create(bigCompletion as never).withResponse();
    expect(["gzip", "br", "deflate"]).toContain(response.headers.get("content-encoding"));
    expect((data as { choices: { message: { content: string } }[] }).choices[0]!.message.content.length).toBeGreaterThan(0);
    const hi = { model: "tiny-chat", messages: [{ role: "user" as const, content: "Hi" }], max_tokens: 8, temperature: 0 };
    const whole = await client.chat.completions.create(hi);
    const stream = await client.chat.completions.create({ ...hi, stream: true });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
    expect(text).toBe(whole.choices[0]!.message.content);
  });
});
