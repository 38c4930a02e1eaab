import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { tinyEmbeddingEntry, tinyGgufEmbeddingEntry, tinyImageEntry, tinyVideoEntry } from "../helpers/mediaModels.js";
import { post, startTestServer, tinyChatEntry, type TestServer } from "../helpers/testServer.js";
import { listLedgerEntries } from "../../src/store/ledger.js";
import { makeDocx, makeZip } from "../helpers/documents.js";

/**
 * Requests built to hurt the node: inputs of megabytes, schemas nested thousands deep, ids
 * of a megabyte. Each must be a 4xx naming the field (or the limit), never a 500 or a stall.
 */
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({
    models: [
      tinyChatEntry({ pricing: { input: { usd: 1, diem: 1 }, output: { usd: 2, diem: 2 } } }),
      tinyEmbeddingEntry({ pricing: { input: { usd: 3, diem: 3 } } }),
      tinyGgufEmbeddingEntry({ pricing: { input: { usd: 1, diem: 1 } } }),
      tinyImageEntry(),
      tinyVideoEntry(),
    ],
  });
});
afterAll(() => server.stop());
// Many requests here fail on purpose: a fresh key per test keeps each under the abuse guard.
beforeEach(() => {
  server.adminKey = server.createKey({ admin: true, usd: 10 }).key;
});

const MB = 1_000_000;
type ErrorJson = { error: string; code?: string; details?: Record<string, any> };

/** The `_errors` of the details node at `path` (a 400 names its field there). */
function errorsAt(json: ErrorJson, path: (string | number)[]): string[] {
  let node: any = json.details;
  for (const key of path) node = node?.[key];
  return node?._errors ?? [];
}

/**
 * Sends a POST whose body is written whole, then (once the body has left) a GET /models/traits, and
 * returns both responses in the order they completed.
 */
async function postThenModels(path: string, body: string): Promise<{ order: string[]; big: { status: number; json: any } }> {
  const order: string[] = [];
  let sendModels!: () => void;
  const bodySent = new Promise<void>((resolve) => (sendModels = resolve));
  const big = new Promise<{ status: number; json: any }>((resolve, reject) => {
    const req = httpRequest(`${server.baseUrl}${path}`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${server.adminKey}` } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        order.push("big");
        resolve({ status: res.statusCode!, json: JSON.parse(Buffer.concat(chunks).toString("utf8")) });
      });
    });
    req.on("error", reject);
    req.end(body, () => sendModels());
  });
  await bodySent;
  // A cheap answer (the registry's traits, no engine asked): it can only come first if the big body's work yields.
  const models = fetch(`${server.baseUrl}/models/traits`).then(async (res) => {
    expect(res.status).toBe(200);
    await res.json();
    order.push("models");
  });
  const [result] = await Promise.all([big, models]);
  return { order, big: result };
}

describe("over-long inputs are refused before tokenizing, without stalling the node", () => {
  it("a 200 KB embeddings input that fits (whitespace around one word) is embedded: the bound never refuses what fits", async () => {
    const input = `${" ".repeat(100_000)}hello${" ".repeat(100_000)}`;
    const res = await post(server, "/embeddings", { model: "tiny-embedding", input, encoding_format: "float" });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { usage: { prompt_tokens: number } }).usage.prompt_tokens).toBeLessThan(10);
  });

  it("a 1 MB embeddings input over the limit only at its end is counted in slices: a GET /models/traits sent after it completes first, then a 400 naming it", async () => {
    // The model loaded first: its load would give the GET its turn whatever the counting does.
    expect((await post(server, "/embeddings", { model: "tiny-embedding", input: "warm" })).status).toBe(200);
    const input = `${" ".repeat(MB)}${"word ".repeat(200)}`;
    const { order, big } = await postThenModels("/embeddings", JSON.stringify({ model: "tiny-embedding", input }));
    expect(big.status).toBe(400);
    expect(big.json.error).toBe("input: this input has more than 128 tokens; tiny-embedding takes at most 128 per input");
    expect(order).toEqual(["models", "big"]);
  });

  it("a 7 MB embeddings input of words is a 400 naming the input and the model's token limit (an encoder vocabulary: counted in chunks, stopped early)", async () => {
    const res = await post(server, "/embeddings", { model: "tiny-embedding", input: ["ok", "word ".repeat(1.4 * MB)] });
    expect(res.status).toBe(400);
    const json = (await res.json()) as ErrorJson;
    expect(json.error).toMatch(/^input\.1: this input has more than 128 tokens; tiny-embedding takes at most 128 per input$/);
    expect(errorsAt(json, ["input", "1"])).toHaveLength(1);
  });

  it("a 7 MB input to a GGUF embedding model is a 400 by its length alone, naming the character bound", async () => {
    const res = await post(server, "/embeddings", { model: "tiny-embedding-gguf", input: "x".repeat(7 * MB) });
    expect(res.status).toBe(400);
    const json = (await res.json()) as ErrorJson;
    const [, chars, tokens, bound] =
      /^input: this input has (\d+) characters; tiny-embedding-gguf takes at most (\d+) tokens per input, which is never more than (\d+) characters$/.exec(json.error)!;
    expect(Number(chars)).toBe(7 * MB);
    // The bound is the token limit times the longest token piece: at least 4 bytes each.
    expect(Number(bound)).toBeGreaterThanOrEqual(Number(tokens) * 4);
    expect(Number(bound)).toBeLessThan(7 * MB);
  });

  it("an input of as many characters as the bound allows is not refused by length: it reaches the tokenizer, whose count decides", async () => {
    const probe = (await (await post(server, "/embeddings", { model: "tiny-embedding-gguf", input: "x".repeat(7 * MB) })).json()) as ErrorJson;
    const bound = Number(/never more than (\d+) characters/.exec(probe.error)![1]);
    const atBound = await post(server, "/embeddings", { model: "tiny-embedding-gguf", input: "x".repeat(bound) });
    expect(atBound.status).toBe(400);
    expect(((await atBound.json()) as ErrorJson).error).toMatch(/^input: this input has more than \d+ tokens/);
    // And text that fits is embedded.
    const fits = await post(server, "/embeddings", { model: "tiny-embedding-gguf", input: "hello world ".repeat(5) });
    expect(fits.status).toBe(200);
  });

  it("a 10 MB chat content is a 400 naming the message's content and the bound, and a GET /models/traits sent after it is answered", async () => {
    // Load the model first, so the bound is checked before any part is read or the model is leased.
    expect((await post(server, "/chat/completions", { model: "tiny-chat", messages: [{ role: "user", content: "hi" }], max_tokens: 1 })).status).toBe(200);
    const body = JSON.stringify({
      model: "tiny-chat",
      messages: [
        { role: "user", content: "hi" },
        { role: "assistant", content: "yes" },
        { role: "user", content: "y".repeat(10 * MB) },
      ],
    });
    const { big } = await postThenModels("/chat/completions", body);
    expect(big.status).toBe(400);
    expect(big.json.error).toMatch(/^messages\.2\.content: 10000000 characters cannot fit: tiny-chat's context holds \d+ tokens, which is never more than \d+ characters$/);
    expect(errorsAt(big.json, ["messages", "2", "content"])).toHaveLength(1);
  });

  it.each([
    ["logit_bias", { logit_bias: { ["1".repeat(10 * MB)]: 1 } }],
    ["metadata", { metadata: { ["k".repeat(10 * MB)]: "v" } }],
  ])("a 10 MB key in %s is a 400 quoting 100 characters of it, not a 500", async (field, extra) => {
    const res = await post(server, "/chat/completions", { model: "tiny-chat", messages: [{ role: "user", content: "hi" }], max_tokens: 1, ...extra });
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(text.length).toBeLessThan(5000);
    expect(JSON.parse(text).error).toMatch(new RegExp(`^(Invalid request parameters: )?${field}`));
  });

  it("messages each under the bound but together over it: a 400 naming messages", async () => {
    const probe = (await (await post(server, "/chat/completions", { model: "tiny-chat", messages: [{ role: "user", content: "z".repeat(3 * MB) }] })).json()) as ErrorJson;
    const bound = Number(/never more than (\d+) characters/.exec(probe.error)![1]);
    const half = "z".repeat(Math.ceil(bound / 2) + 1);
    const res = await post(server, "/chat/completions", {
      model: "tiny-chat",
      messages: [
        { role: "user", content: half },
        { role: "user", content: half },
      ],
    });
    expect(res.status).toBe(400);
    const json = (await res.json()) as ErrorJson;
    expect(json.error).toMatch(/^messages: \d+ characters cannot fit/);
    expect(errorsAt(json, ["messages"])).toHaveLength(1);
  });

  it("a conversation within the length bound but over the context is measured in slices and refused before the prompt is tokenized whole", async () => {
    const res = await post(server, "/chat/completions", { model: "tiny-chat", messages: [{ role: "user", content: "word ".repeat(4000) }] });
    expect(res.status).toBe(400);
    const json = (await res.json()) as ErrorJson;
    expect(json.error).toMatch(/^messages: the conversation has more than (\d+) tokens; tiny-chat's context holds \1$/);
    // A long conversation that fits is answered.
    const fits = await post(server, "/chat/completions", { model: "tiny-chat", messages: [{ role: "user", content: "the ".repeat(1900) }], max_tokens: 1 });
    expect(fits.status, await fits.clone().text()).toBe(200);
  });

  it("more messages than the context can hold at the template's own tokens: a 400 before rendering (60,000 empty ones took 43 s of the event loop)", async () => {
    const turns = (n: number) => Array.from({ length: n }, (_, i) => ({ role: i % 2 === 0 ? "user" : "assistant", content: "" }));
    const res = await post(server, "/chat/completions", { model: "tiny-chat", messages: turns(60_000) });
    expect(res.status).toBe(400);
    const json = (await res.json()) as ErrorJson;
    // ChatML's scaffolding, measured at load: each exchange of turns costs tokens of its own.
    const [, count, floor, context] = /^messages: (\d+) messages cannot fit: the chat template writes at least (\d+) tokens around them, and tiny-chat's context holds (\d+)$/.exec(
      json.error,
    )!;
    expect(Number(count)).toBe(60_000);
    expect(Number(floor)).toBeGreaterThan(2 * 60_000);
    // Within the bound, the conversation is rendered and measured: answered, or refused by its tokens.
    const within = Math.floor((0.9 * Number(context) * 60_000) / Number(floor));
    const fits = await post(server, "/chat/completions", { model: "tiny-chat", messages: turns(within), max_tokens: 1 });
    if (fits.status !== 200) expect(((await fits.json()) as ErrorJson).error).toMatch(/the prompt is \d+ tokens but this model's context holds/);
    // The same number of messages in one role merge into one turn: far fewer tokens, not refused by their count.
    const merged = await post(server, "/chat/completions", {
      model: "tiny-chat",
      messages: Array.from({ length: within * 2 }, () => ({ role: "user", content: "" })),
      max_tokens: 1,
    });
    expect(merged.status, await merged.clone().text()).toBe(200);
  });

  it("tool definitions count toward the prompt's length bound: a 400 naming the tool, or all the tools", async () => {
    const probe = (await (await post(server, "/chat/completions", { model: "tiny-chat", messages: [{ role: "user", content: "z".repeat(3 * MB) }] })).json()) as ErrorJson;
    const bound = Number(/never more than (\d+) characters/.exec(probe.error)![1]);
    const tool = (name: string, description: string) => ({ type: "function", function: { name, description, parameters: { type: "object", properties: {} } } });
    const one = await post(server, "/chat/completions", { model: "tiny-chat", messages: [{ role: "user", content: "hi" }], tools: [tool("f", "word ".repeat(bound / 4))] });
    expect(one.status).toBe(400);
    const oneJson = (await one.json()) as ErrorJson;
    expect(oneJson.error).toMatch(/^tools\.0\.function: \d+ characters cannot fit/);
    const half = "word ".repeat(Math.ceil(bound / 10) + 1);
    const two = await post(server, "/chat/completions", { model: "tiny-chat", messages: [{ role: "user", content: "hi" }], tools: [tool("f", half), tool("g", half)] });
    expect(((await two.json()) as ErrorJson).error).toMatch(/^tools: \d+ characters cannot fit/);
    // Within the character bound, the tools' text is counted with the conversation's, in slices.
    const tokens = await post(server, "/chat/completions", { model: "tiny-chat", messages: [{ role: "user", content: "hi" }], tools: [tool("f", "word ".repeat(4000))] });
    expect(((await tokens.json()) as ErrorJson).error).toMatch(/^messages: the conversation has more than \d+ tokens/);
  });

  it("10 MB prompts on the image and video routes (bodies that may carry a picture): a 400 naming the prompt; past the route's limit a 413 naming it", async () => {
    const image = await post(server, "/images/generations", { model: "tiny-sd", prompt: "p".repeat(10 * MB) });
    expect(image.status).toBe(400);
    expect(errorsAt((await image.json()) as ErrorJson, ["prompt"])).toHaveLength(1);
    const video = await post(server, "/video/queue", { model: "tiny-video", duration: "1s", prompt: "p".repeat(10 * MB) });
    expect(video.status).toBe(400);
    expect(errorsAt((await video.json()) as ErrorJson, ["prompt"])).toHaveLength(1);
    const quote = await post(server, "/video/quote", { model: "tiny-video", duration: "1s", prompt: "p".repeat(10 * MB) });
    expect(quote.status).toBe(413);
    expect(await quote.json()).toEqual({ error: "Request body is too large: POST /video/quote accepts at most 16 KB (16000 bytes)", code: "PAYLOAD_TOO_LARGE" });
  });
});

describe("document extraction runs off the event loop", () => {
  it("a 1.6 MB CSV file part is parsed in a worker thread: a GET /models/traits sent after it completes first, then its over-long text is a 400 naming the part", async () => {
    const csv = Buffer.from("alpha,beta\n".repeat(150_000)).toString("base64");
    const body = JSON.stringify({
      model: "tiny-chat",
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "sum" },
            { type: "file", file: { filename: "big.csv", file_data: `data:text/csv;base64,${csv}` } },
          ],
        },
      ],
    });
    const { order, big } = await postThenModels("/chat/completions", body);
    expect(big.status).toBe(400);
    expect(big.json.error).toMatch(/^messages\.0\.content\.1\.file: the file's text is \d+ characters long; this node reads at most 1000000 characters per file$/);
    expect(order).toEqual(["models", "big"]);
  });

  it("an Office zip bomb (under 1 MB, 65 MB of XML unzipped) is a 413 in chat and /augment/text-parser, and the next document is read", async () => {
    const bomb = makeZip([{ name: "word/document.xml", data: Buffer.alloc(65 * 2 ** 20, "<w:p><w:r><w:t>a</w:t></w:r></w:p>") }]);
    expect(bomb.length).toBeLessThan(MB);
    const docxType = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
    const chatWith = (file: Buffer) =>
      post(server, "/chat/completions", {
        model: "tiny-chat",
        max_tokens: 1,
        messages: [{ role: "user", content: [{ type: "file", file: { filename: "f.docx", file_data: `data:${docxType};base64,${file.toString("base64")}` } }] }],
      });
    const chat = await chatWith(bomb);
    expect(chat.status).toBe(413);
    expect(((await chat.json()) as ErrorJson).error).toBe(
      "messages.0.content.0.file: the DOCX file expands to more than 64 MB when unzipped; this node reads Office files of at most 64 MB unzipped",
    );
    const form = new FormData();
    form.append("file", new Blob([new Uint8Array(bomb)], { type: docxType }), "f.docx");
    const parsed = await fetch(`${server.baseUrl}/augment/text-parser`, { method: "POST", headers: { authorization: `Bearer ${server.adminKey}` }, body: form });
    expect(parsed.status).toBe(413);
    expect(((await parsed.json()) as ErrorJson).error).toMatch(/DOCX file expands to more than 64 MB/);
    expect((await chatWith(await makeDocx(["a real document"]))).status).toBe(200);
  });
});

describe("body limits per route", () => {
  it.each([
    ["/embeddings", 10 * MB, "8 MB"],
    ["/audio/speech", 100_000, "64 KB"],
    ["/api_keys", 20_000, "16 KB"],
    ["/crypto/rpc/ethereum", 2 * MB, "1 MB"],
  ])("POST %s over its limit is a 413 naming it", async (path, size, limit) => {
    const res = await post(server, path, { model: "m", input: "i".repeat(size), description: "d".repeat(size) });
    expect(res.status).toBe(413);
    const json = (await res.json()) as ErrorJson;
    expect(json.code).toBe("PAYLOAD_TOO_LARGE");
    expect(json.error).toContain(`accepts at most ${limit}`);
  });

  it("chat keeps room for file parts: 10 MB reaches validation (a 400, not a 413)", async () => {
    const res = await post(server, "/chat/completions", { model: "tiny-chat", messages: [{ role: "robot", content: "r".repeat(10 * MB) }] });
    expect(res.status).toBe(400);
  });
});

describe("bodies of 1 MB and more, parsed on a worker thread", () => {
  /** The same JSON with a megabyte of insignificant whitespace after its first brace. */
  const padded = (json: string) => json.replace(/^\{/, `{${" ".repeat(MB)}`);

  it("are answered as small ones are: UTF-8 read intact, malformed JSON and a bare value a 400, past the route's limit a 413 naming it", async () => {
    const named = await post(server, "/chat/completions", padded(JSON.stringify({ model: "héllo-😀-model", messages: [{ role: "user", content: "hi" }] })));
    expect(named.status).toBe(404);
    expect(((await named.json()) as ErrorJson).error).toContain("héllo-😀-model");
    const malformed = await post(server, "/chat/completions", padded('{"model": "tiny-chat", "messages": [}'));
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as ErrorJson).error).toMatch(/^Malformed JSON in request body: /);
    const bare = await post(server, "/chat/completions", `"${"x".repeat(MB)}"`);
    expect(bare.status).toBe(400);
    expect(((await bare.json()) as ErrorJson).error).toMatch(/^Malformed JSON in request body: /);
    const overLimit = await post(server, "/audio/speech", padded(JSON.stringify({ model: "tts", input: "hi", voice: "v" })));
    expect(overLimit.status).toBe(413);
    expect(((await overLimit.json()) as ErrorJson).error).toMatch(/^Request body is too large: POST \/audio\/speech accepts at most/);
  });
});

describe("nesting and size limits on schemas and free-form JSON", () => {
  const nested = (depth: number, leaf = '{"type":"string"}') => `${'{"type":"object","properties":{"a":'.repeat(depth)}${leaf}${"}}".repeat(depth)}`;
  const chat = (extra: string) => `{"model":"tiny-chat","messages":[{"role":"user","content":"hi"}],"max_tokens":1,${extra}}`;

  it.each([
    ["response_format", `"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":${nested(2000)}}}`, ["response_format", "json_schema", "schema"]],
    ["tools[].function.parameters", `"tools":[{"type":"function","function":{"name":"f","parameters":${nested(2000)}}}]`, ["tools", "0", "function", "parameters"]],
    ["a free-form field", `"metadata":${"[".repeat(5000)}${"]".repeat(5000)}`, ["metadata"]],
  ])("a %s nested thousands of levels deep is a 400 naming the field", async (_name, extra, path) => {
    const res = await post(server, "/chat/completions", chat(extra));
    expect(res.status).toBe(400);
    const json = (await res.json()) as ErrorJson;
    expect(json.error).toBe(`${path.join(".")}: the request body is nested deeper than 128 levels`);
    expect(errorsAt(json, path)).toHaveLength(1);
  });

  it("a schema within the body's bound but past the schema's own (64 levels, 2,000 values) is a 400 naming it", async () => {
    const deep = await post(server, "/chat/completions", chat(`"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":${nested(40)}}}`));
    expect(deep.status).toBe(400);
    const deepJson = (await deep.json()) as ErrorJson;
    expect(errorsAt(deepJson, ["response_format", "json_schema"])).toEqual(["this schema is nested deeper than 64 levels"]);
    const wide = JSON.stringify(Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`p${i}`, { type: "string" }])));
    const big = await post(server, "/chat/completions", chat(`"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":${wide}}}}]`));
    expect(big.status).toBe(400);
    expect(errorsAt((await big.json()) as ErrorJson, ["tools", "0", "function", "parameters"])).toEqual(["this schema has more than 2000 values"]);
  });

  it("a large body past the value or nesting bound is refused from its text, before it is parsed", async () => {
    const many = await post(server, "/chat/completions", chat(`"metadata":{"a":[${"1,".repeat(1_000_000)}1]}`));
    expect(many.status).toBe(400);
    // Refused unparsed, the violation is the body's (a parsed one names the field, as above).
    expect(((await many.json()) as ErrorJson).error).toBe("the request body has more than 200000 values");
    const deep = await post(server, "/chat/completions", chat(`"metadata":"${"x".repeat(2 * MB)}","x":${"[".repeat(200)}${"]".repeat(200)}`));
    expect(deep.status).toBe(400);
    expect(((await deep.json()) as ErrorJson).error).toBe("the request body is nested deeper than 128 levels");
    // A large body that is mostly one string, within the bounds, goes on to validation.
    const long = await post(server, "/chat/completions", chat(`"metadata":{"a":"${"x,[{".repeat(MB)}"}`));
    expect(((await long.json()) as ErrorJson).error).toMatch(/^Invalid request parameters: metadata/);
    // UTF-16 is not scanned: its characters hold quote and comma bytes (U+2200 is 00 22, U+2C00 00 2C), which are neither.
    const utf16 = await fetch(`${server.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.adminKey}`, "content-type": "application/json; charset=utf-16le" },
      body: Buffer.from(chat(`"metadata":{"a":"${"\u2200\u2c00".repeat(MB / 2)}"}`), "utf16le"),
    });
    expect(((await utf16.json()) as ErrorJson).error).toMatch(/^Invalid request parameters: metadata/);
  });

  it("deep bodies on routes without schemas are 400s too (never a stack overflow)", async () => {
    for (const path of ["/embeddings", "/crypto/rpc/ethereum", "/video/quote"]) {
      const res = await post(server, path, `{"input":${"[".repeat(3000)}${"]".repeat(3000)}}`);
      expect(res.status, path).toBe(400);
      expect(((await res.json()) as ErrorJson).error).toBe("input.0.0.0: the request body is nested deeper than 128 levels");
    }
  });
});

describe("error messages quote at most a short prefix", () => {
  it("a 1 MB id in PATCH /api_keys: a 413 of a few hundred bytes; a 15 KB id: a 404 quoting 100 characters of it", async () => {
    const huge = await fetch(`${server.baseUrl}/api_keys`, {
      method: "PATCH",
      headers: { "content-type": "application/json", authorization: `Bearer ${server.adminKey}` },
      body: JSON.stringify({ id: "k".repeat(MB) }),
    });
    expect(huge.status).toBe(413);
    expect((await huge.text()).length).toBeLessThan(300);
    const long = await fetch(`${server.baseUrl}/api_keys`, {
      method: "PATCH",
      headers: { "content-type": "application/json", authorization: `Bearer ${server.adminKey}` },
      body: JSON.stringify({ id: "k".repeat(15_000), description: "x" }),
    });
    expect(long.status).toBe(404);
    const text = await long.text();
    expect(text.length).toBeLessThan(400);
    expect((JSON.parse(text) as ErrorJson).error).toBe(`No API key with id ${"k".repeat(100)}… in this account`);
  });

  it("a long unknown character slug and a long model id are quoted short", async () => {
    const slug = await post(server, "/chat/completions", { messages: [{ role: "user", content: "hi" }], service_parameters: { character_slug: "s".repeat(50_000) } });
    expect(slug.status).toBe(400);
    expect((await slug.text()).length).toBeLessThan(1000);
    const model = await post(server, "/embeddings", { model: "m".repeat(50_000), input: "hi" });
    expect(model.status).toBe(404);
    expect((await model.text()).length).toBeLessThan(600);
  });
});

describe("every charge shows its cost", () => {
  function chargedMicros(accountId: string): number {
    return -listLedgerEntries(server.db, { accountId, kind: "charge" }).reduce((sum, row) => sum + row.deltaMicros, 0);
  }

  it("embeddings: `cost` and x-service-cost-usd / -diem equal the ledger's charge", async () => {
    const { key, accountId } = server.createKey({ usd: 1 });
    let ledgerBefore = chargedMicros(accountId);
    for (const model of ["tiny-embedding", "tiny-embedding-gguf"]) {
      const res = await post(server, "/embeddings", { model, input: ["The quick brown fox", "jumps over the lazy dog"] }, { key });
      expect(res.status).toBe(200);
      const json = (await res.json()) as { cost: { usd: number; diem: number }; usage: { prompt_tokens: number } };
      const charged = chargedMicros(accountId) - ledgerBefore;
      ledgerBefore += charged;
      expect(charged).toBe(json.usage.prompt_tokens * (model === "tiny-embedding" ? 3 : 1));
      expect(json.cost).toEqual({ usd: charged / 1e6, diem: 0 });
      expect(res.headers.get("x-service-cost-usd")).toBe((charged / 1e6).toFixed(6));
      expect(res.headers.get("x-service-cost-diem")).toBe("0.000000");
    }
  });

  it("chat (not streamed): the x-service-cost-usd header equals the body's cost and the ledger's charge", async () => {
    const { key, accountId } = server.createKey({ usd: 1 });
    const res = await post(server, "/chat/completions", { model: "tiny-chat", messages: [{ role: "user", content: "hello" }], max_tokens: 3 }, { key });
    expect(res.status).toBe(200);
    const json = (await res.json()) as { cost: { usd: number; diem: number } };
    const charged = chargedMicros(accountId);
    expect(charged).toBeGreaterThan(0);
    expect(json.cost.usd).toBe(charged / 1e6);
    expect(res.headers.get("x-service-cost-usd")).toBe((charged / 1e6).toFixed(6));
  });
});
