import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { grantCredits } from "../../src/store/ledger.js";
import { ensureWalletAccount } from "../../src/store/wallets.js";
import { parameterExample, requestExample } from "../helpers/providerExamples.js";
import { PROVIDER_NODE_WALLET, PROVIDER_OPERATIONS_NOT_SERVED, type ProviderNode, startProviderNode } from "../helpers/providerNode.js";
import { providerValidators } from "../helpers/providerSchema.js";
import type { TestServer } from "../helpers/testServer.js";
import { evmPayment, evmSignIn, evmWallet } from "../helpers/wallets.js";

/**
 * Strict conformance: every operation of the provider's document (path and method) is sent to a
 * fresh node with a request built from the provider's own examples (ids adjusted to this node's
 * models and the resources the walk created), and each answer's body is checked against the
 * provider's schema for its status (binary answers by content type). An operation the node does
 * not serve must be in NOT_SERVED; one that is served must leave it.
 */

type Json = Record<string, any>;

/** The media operations of a later issue; nothing else may be listed (see the helper). */
const NOT_SERVED = PROVIDER_OPERATIONS_NOT_SERVED;

/**
 * Where Hearth deliberately differs from the provider's document, each with its reason. Nothing
 * else is widened: every other body must match the provider's schema as written.
 */
function adjustments(doc: Json): void {
  const responses = doc.paths["/responses"].post.responses[200].content["application/json"].schema;
  // The Responses standard (and the openai client) ends a reply cut by max_output_tokens with status
  // "incomplete" and incomplete_details; the provider's enum lists only the other statuses.
  responses.properties.status.enum.push("incomplete");
  const message = responses.properties.output.items.anyOf.find((item: Json) => item.properties?.type?.enum?.includes("message"));
  message.properties.status.enum.push("incomplete");
  // The standard's `error` is null when the response did not fail (the openai client types it so); the provider's is an object.
  responses.properties.error = { anyOf: [responses.properties.error, { type: "null" }] };
  // encoding_format "base64" (the provider accepts it) returns each vector as a base64 string of
  // little-endian float32s, the standard's encoding the openai client decodes; the provider's
  // response schema only documents the float arrays.
  const embedding = doc.paths["/embeddings"].post.responses[200].content["application/json"].schema.properties.data.items.properties.embedding;
  doc.paths["/embeddings"].post.responses[200].content["application/json"].schema.properties.data.items.properties.embedding = {
    anyOf: [embedding, { type: "string", contentEncoding: "base64" }],
  };
}

const { doc, response: providerResponse } = providerValidators(adjustments);
const operations = Object.entries(doc.paths as Json).flatMap(([path, item]) =>
  Object.keys(item as Json)
    .filter((m) => ["get", "post", "put", "patch", "delete"].includes(m))
    .map((method) => ({ method, path, name: `${method.toUpperCase()} ${path}` })),
);

let provider: ProviderNode;
let node: TestServer;
let peerBase: string;
let spokenWav: Buffer;
let picture: Buffer;
let domain: string;
const { payTo: PAY_TO, baseUsdc: BASE_USDC } = PROVIDER_NODE_WALLET;

beforeAll(async () => {
  provider = await startProviderNode();
  ({ node, peerBase, spokenWav, picture } = provider);
  domain = new URL(node.url).host;
}, 120_000);
afterAll(() => provider?.stop());

interface Call {
  /** The concrete path (path parameters filled in); the operation's path by default. */
  path?: string;
  query?: Record<string, string>;
  headers?: Record<string, string>;
  json?: unknown;
  form?: Record<string, string | { data: Buffer; name: string; type: string }>;
  /** The node operator's funded key by default; null sends no credentials. */
  key?: string | null;
}

const example = (method: string, path: string, overrides: Json = {}, contentType?: string) => ({ ...requestExample(doc, method, path, contentType), ...overrides });
const header = async (res: Response) => Object.fromEntries(res.headers.entries());

async function send(method: string, path: string, call: Call): Promise<Response> {
  const url = new URL(`${node.baseUrl}${call.path ?? path}`);
  for (const [k, v] of Object.entries(call.query ?? {})) url.searchParams.set(k, v);
  const headers: Record<string, string> = { ...call.headers };
  const key = call.key === undefined ? node.adminKey : call.key;
  if (key) headers.authorization = `Bearer ${key}`;
  let body: FormData | string | undefined;
  if (call.form) {
    const form = new FormData();
    for (const [k, v] of Object.entries(call.form)) {
      if (typeof v === "string") form.append(k, v);
      else form.append(k, new Blob([new Uint8Array(v.data)], { type: v.type }), v.name);
    }
    body = form;
  } else if (call.json !== undefined) {
    headers["content-type"] = "application/json";
    body = JSON.stringify(call.json);
  }
  return fetch(url, { method: method.toUpperCase(), headers, body });
}

/** Sends one call and checks the answer against the provider's schema for its status; returns the JSON body. */
async function conforms(method: string, path: string, call: Call, status = 200): Promise<any> {
  const res = await send(method, path, call);
  const contentType = (res.headers.get("content-type") ?? "").split(";")[0]!.trim();
  const documented = Object.keys(doc.paths[path][method].responses[String(res.status)]?.content ?? {});
  if (res.status !== status) throw new Error(`${method.toUpperCase()} ${path}: ${res.status} (expected ${status}): ${(await res.text()).slice(0, 600)}`);
  if (!documented.includes(contentType))
    throw new Error(`${method.toUpperCase()} ${path} ${res.status}: ${contentType} is not a documented content type (${documented.join(", ")})`);
  if (contentType !== "application/json") {
    await res.arrayBuffer();
    return { contentType, headers: await header(res) };
  }
  const body = await res.json();
  const validate = providerResponse(method, path, res.status, contentType)!;
  const errors = validate(body);
  if (errors) throw new Error(`${method.toUpperCase()} ${path} ${res.status} does not match the provider's schema:\n  ${errors}\n${JSON.stringify(body).slice(0, 1500)}`);
  return body;
}

/** An API key created through the API, for the operations that read, change or delete one. */
async function createdKey(): Promise<string> {
  const body = await conforms("post", "/api_keys", { json: example("post", "/api_keys") });
  return body.data.id;
}

async function queuedVideo(): Promise<string> {
  const queued = await conforms("post", "/video/queue", { json: videoRequest("post", "/video/queue") });
  return queued.queue_id;
}

/** The provider's video example on this node's model: its 10s/720p are not among tiny-video's durations and resolutions. */
const videoRequest = (method: string, path: string, overrides: Json = {}) => {
  const body = example(method, path, { model: "tiny-video", ...overrides });
  if (body.duration !== undefined) body.duration = "1s";
  if (body.resolution !== undefined) body.resolution = "64p";
  return body;
};

async function waitForVideo(queueId: string) {
  for (let i = 0; i < 240; i++) {
    const res = await send("post", "/video/retrieve", { json: videoRequest("post", "/video/retrieve", { queue_id: queueId }) });
    if (res.headers.get("content-type")?.startsWith("video/mp4")) return res.arrayBuffer();
    await res.arrayBuffer();
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error("the video never completed");
}

/** The provider's audio-job example on the node's speech model: the music fields (duration, lyrics, loop, instrumental) and its voice are a music model's. */
const speechJob = (method: string, path: string, overrides: Json = {}) => {
  const body = example(method, path, { model: "tts-kokoro", ...overrides });
  for (const name of ["duration_seconds", "lyrics_prompt", "force_instrumental", "lyrics_optimizer", "loop"]) delete body[name];
  if (body.voice !== undefined) body.voice = "af_heart";
  return body;
};

/** The provider's audio-job example on the node's music model: it takes no lyrics, voice, language or speed; 2 seconds keep the walk quick. */
const musicJob = (method: string, path: string, overrides: Json = {}) => {
  const body = example(method, path, { model: "tiny-musicgen", ...overrides });
  for (const name of ["lyrics_prompt", "voice", "language_code", "speed"]) delete body[name];
  return body;
};

async function queuedAudio(): Promise<string> {
  const queued = await conforms("post", "/audio/queue", { json: speechJob("post", "/audio/queue") });
  return queued.queue_id;
}

async function waitForAudio(queueId: string, job = speechJob) {
  for (let i = 0; i < 240; i++) {
    const res = await send("post", "/audio/retrieve", { json: job("post", "/audio/retrieve", { queue_id: queueId }) });
    if (res.headers.get("content-type")?.startsWith("audio/")) return res.arrayBuffer();
    await res.arrayBuffer();
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("the audio never completed");
}

async function signIn(wallet = evmWallet()) {
  return { wallet, header: await evmSignIn(wallet, { domain }) };
}

/**
 * Each operation's walk. A step may send several calls (a variant per model type, a resource made
 * first); every answer is checked by `conforms`.
 */
const WALK: Record<string, () => Promise<void>> = {
  "POST /chat/completions": async () => {
    // The tiny model and a short greedy reply: max_tokens and temperature are the walk's.
    const body = await conforms("post", "/chat/completions", { json: example("post", "/chat/completions", { model: "tiny-chat", max_tokens: 8, temperature: 0 }) });
    expect(body.object).toBe("chat.completion");
  },
  "POST /responses": async () => {
    const body = await conforms("post", "/responses", { json: example("post", "/responses", { model: "tiny-chat", max_output_tokens: 8, temperature: 0 }) });
    expect(body.object).toBe("response");
  },
  "POST /image/generate": async () => {
    const body = await conforms("post", "/image/generate", { json: example("post", "/image/generate", { model: "tiny-sd" }) });
    expect(body.images).toHaveLength(1);
    const binary = await conforms("post", "/image/generate", { json: example("post", "/image/generate", { model: "tiny-sd", return_binary: true, format: "png" }) });
    expect(binary.contentType).toBe("image/png");
  },
  "POST /images/generations": async () => {
    const body = await conforms("post", "/images/generations", { json: example("post", "/images/generations", { model: "tiny-sd" }) });
    expect(body.data).toHaveLength(1);
  },
  "GET /image/styles": async () => {
    await conforms("get", "/image/styles", { key: null });
  },
  "GET /models": async () => {
    for (const type of [undefined, "text", "embedding", "image", "tts", "asr", "video", "music", "all"]) {
      const body = await conforms("get", "/models", { key: null, query: type ? { type } : {} });
      expect(body.data.length, `GET /models?type=${type}`).toBeGreaterThan(0);
    }
  },
  "GET /models/traits": async () => {
    for (const type of ["text", "image", "tts", "asr", "video", "embedding", "music"]) await conforms("get", "/models/traits", { key: null, query: { type } });
  },
  "GET /models/compatibility_mapping": async () => {
    for (const type of ["text", "image", "tts", "asr", "video", "embedding", "music"]) await conforms("get", "/models/compatibility_mapping", { key: null, query: { type } });
  },
  "GET /api_keys": async () => {
    await createdKey();
    const body = await conforms("get", "/api_keys", {});
    expect(body.data.length).toBeGreaterThan(1);
  },
  "DELETE /api_keys": async () => {
    const id = await createdKey();
    expect((await conforms("delete", "/api_keys", { query: { id } })).success).toBe(true);
  },
  "POST /api_keys": async () => {
    const body = await conforms("post", "/api_keys", { json: example("post", "/api_keys") });
    expect(body.data.apiKey).toBeTypeOf("string");
  },
  "PATCH /api_keys": async () => {
    const id = await createdKey();
    const body = await conforms("patch", "/api_keys", { json: example("patch", "/api_keys", { id }) });
    expect(body.data.id).toBe(id);
  },
  "GET /api_keys/{id}": async () => {
    const id = await createdKey();
    expect((await conforms("get", "/api_keys/{id}", { path: `/api_keys/${id}` })).data.id).toBe(id);
  },
  "GET /api_keys/rate_limits": async () => {
    await conforms("get", "/api_keys/rate_limits", {});
  },
  "GET /api_keys/rate_limits/log": async () => {
    await conforms("get", "/api_keys/rate_limits/log", {});
  },
  "GET /api_keys/generate_web3_key": async () => {
    expect((await conforms("get", "/api_keys/generate_web3_key", { key: null })).data.token).toBeTypeOf("string");
  },
  "POST /api_keys/generate_web3_key": async () => {
    const wallet = evmWallet();
    // This node gives wallet keys to wallets holding credit (its default).
    grantCredits(node.db, ensureWalletAccount(node.db, wallet.address, "evm"), "USD", 1_000_000, "test");
    const token = (await conforms("get", "/api_keys/generate_web3_key", { key: null })).data.token;
    const json = example("post", "/api_keys/generate_web3_key", { address: wallet.address, token, signature: await wallet.signMessage({ message: token }) });
    expect((await conforms("post", "/api_keys/generate_web3_key", { key: null, json })).data.apiKey).toBeTypeOf("string");
  },
  "GET /characters": async () => {
    expect((await conforms("get", "/characters", {})).data.length).toBe(1);
  },
  "GET /characters/{slug}": async () => {
    const slug = String(parameterExample(doc, "get", "/characters/{slug}", "slug"));
    expect((await conforms("get", "/characters/{slug}", { path: `/characters/${slug}` })).data.slug).toBe(slug);
  },
  "GET /characters/{slug}/reviews": async () => {
    const slug = String(parameterExample(doc, "get", "/characters/{slug}/reviews", "slug"));
    await conforms("get", "/characters/{slug}/reviews", { path: `/characters/${slug}/reviews` });
  },
  "POST /embeddings": async () => {
    const body = await conforms("post", "/embeddings", { json: example("post", "/embeddings", { model: "tiny-embedding" }) });
    expect(body.data[0].embedding.length).toBeGreaterThan(0);
    await conforms("post", "/embeddings", { json: example("post", "/embeddings", { model: "tiny-embedding", encoding_format: "base64" }) });
  },
  "POST /audio/speech": async () => {
    // af_sky is not one of the tiny Kokoro's voices.
    const binary = await conforms("post", "/audio/speech", { json: example("post", "/audio/speech", { model: "tts-kokoro", voice: "af_heart" }) });
    expect(binary.contentType).toBe("audio/mpeg");
  },
  "POST /audio/transcriptions": async () => {
    const fields = example("post", "/audio/transcriptions", { model: "tiny-whisper" }, "multipart/form-data");
    const form = {
      ...Object.fromEntries(
        Object.entries(fields)
          .filter(([k]) => k !== "file")
          .map(([k, v]) => [k, String(v)]),
      ),
      file: { data: spokenWav, name: "speech.wav", type: "audio/wav" },
    };
    expect((await conforms("post", "/audio/transcriptions", { form })).text).toBeTypeOf("string");
  },
  "POST /audio/voices": async () => {
    const fields = example("post", "/audio/voices", { model: "tts-kokoro" }, "multipart/form-data");
    const form = { ...Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, String(v)])), file: { data: spokenWav, name: "sample.wav", type: "audio/wav" } };
    expect((await conforms("post", "/audio/voices", { form })).id).toBeTypeOf("string");
  },
  "POST /video/complete": async () => {
    const queueId = await queuedVideo();
    await waitForVideo(queueId);
    expect((await conforms("post", "/video/complete", { json: videoRequest("post", "/video/complete", { queue_id: queueId }) })).success).toBe(true);
  },
  "POST /video/queue": async () => {
    expect(await queuedVideo()).toBeTypeOf("string");
  },
  "POST /video/quote": async () => {
    expect((await conforms("post", "/video/quote", { json: videoRequest("post", "/video/quote") })).quote).toBeGreaterThanOrEqual(0);
  },
  "POST /video/retrieve": async () => {
    const queueId = await queuedVideo();
    await conforms("post", "/video/retrieve", { json: videoRequest("post", "/video/retrieve", { queue_id: queueId }) });
    await waitForVideo(queueId);
    expect((await conforms("post", "/video/retrieve", { json: videoRequest("post", "/video/retrieve", { queue_id: queueId }) })).contentType).toBe("video/mp4");
  },
  "POST /image/upscale": async () => {
    // The provider's example image is a cut-off base64 string: this node's picture in its place.
    const json = example("post", "/image/upscale", { image: picture.toString("base64") });
    expect((await conforms("post", "/image/upscale", { json })).contentType).toBe("image/png");
    const form = { scale: "2", image: { data: picture, name: "picture.png", type: "image/png" } };
    expect((await conforms("post", "/image/upscale", { form })).contentType).toBe("image/png");
  },
  "POST /image/edit": async () => {
    // The provider's example image is a cut-off base64 string: this node's picture in its place.
    const json = example("post", "/image/edit", { image: picture.toString("base64"), model: "tiny-sd" });
    expect((await conforms("post", "/image/edit", { json })).contentType).toBe("image/png");
  },
  "POST /image/multi-edit": async () => {
    // This node's diffusion models edit one picture: the example's list cut to its first, a real one.
    const json = example("post", "/image/multi-edit", { images: [picture.toString("base64")], modelId: "tiny-sd" });
    delete json.model;
    expect((await conforms("post", "/image/multi-edit", { json })).contentType).toMatch(/^image\//);
  },
  "POST /image/background-remove": async () => {
    const json = example("post", "/image/background-remove", { image_url: `${peerBase}/picture.png` });
    expect((await conforms("post", "/image/background-remove", { json })).contentType).toBe("image/png");
    expect((await conforms("post", "/image/background-remove", { json: { image: picture.toString("base64") } })).contentType).toBe("image/png");
  },
  "POST /audio/quote": async () => {
    // A speech model: priced per character; the example's duration is a music model's.
    const json = speechJob("post", "/audio/quote");
    expect((await conforms("post", "/audio/quote", { json })).quote).toBeGreaterThanOrEqual(0);
    // The music model takes the example's duration as it is.
    expect((await conforms("post", "/audio/quote", { json: musicJob("post", "/audio/quote", { duration_seconds: 60 }) })).quote).toBeGreaterThanOrEqual(0);
  },
  "POST /audio/queue": async () => {
    expect(await queuedAudio()).toBeTypeOf("string");
  },
  "POST /audio/retrieve": async () => {
    const queueId = await queuedAudio();
    await conforms("post", "/audio/retrieve", { json: speechJob("post", "/audio/retrieve", { queue_id: queueId }) });
    await waitForAudio(queueId);
    expect((await conforms("post", "/audio/retrieve", { json: speechJob("post", "/audio/retrieve", { queue_id: queueId }) })).contentType).toBe("audio/mpeg");
    const music = (await conforms("post", "/audio/queue", { json: musicJob("post", "/audio/queue", { duration_seconds: 2, loop: false, force_instrumental: true }) })).queue_id;
    await waitForAudio(music, musicJob);
    expect((await conforms("post", "/audio/retrieve", { json: musicJob("post", "/audio/retrieve", { queue_id: music }) })).contentType).toBe("audio/mpeg");
  },
  "POST /audio/complete": async () => {
    const queueId = await queuedAudio();
    await waitForAudio(queueId);
    expect((await conforms("post", "/audio/complete", { json: speechJob("post", "/audio/complete", { queue_id: queueId }) })).success).toBe(true);
  },
  "POST /video/transcriptions": async () => {
    const json = example("post", "/video/transcriptions", { url: `${peerBase}/talk.mp4` });
    expect((await conforms("post", "/video/transcriptions", { json })).transcript).toBeTypeOf("string");
  },
  "POST /augment/text-parser": async () => {
    const form = { file: { data: Buffer.from("The last keeper left the rock in 1998.\n"), name: "notes.txt", type: "text/plain" } };
    expect((await conforms("post", "/augment/text-parser", { form })).text).toContain("1998");
  },
  "GET /billing/balance": async () => {
    await conforms("get", "/billing/balance", {});
  },
  "GET /billing/usage": async () => {
    // The provider documents only its 410 (the endpoint is gone): that body is checked.
    await conforms("get", "/billing/usage", {}, 410);
  },
  "GET /billing/usage-analytics": async () => {
    await conforms("get", "/billing/usage-analytics", { query: { lookback: String(parameterExample(doc, "get", "/billing/usage-analytics", "lookback") ?? "7d") } });
  },
  "GET /billing/usage-history": async () => {
    await conforms("get", "/billing/usage-history", { query: { pageSize: "10" } });
  },
  "GET /crypto/rpc/networks": async () => {
    expect((await conforms("get", "/crypto/rpc/networks", { key: null })).networks).toContain("ethereum-mainnet");
  },
  "POST /crypto/rpc/{network}": async () => {
    const network = String(parameterExample(doc, "post", "/crypto/rpc/{network}", "network"));
    for (const name of ["singleRequest", "batchRequest"]) {
      const json = doc.paths["/crypto/rpc/{network}"].post.requestBody.content["application/json"].examples[name].value;
      await conforms("post", "/crypto/rpc/{network}", { path: `/crypto/rpc/${network}`, json });
    }
  },
  "GET /x402/balance/{walletAddress}": async () => {
    const { wallet, header } = await signIn();
    await conforms("get", "/x402/balance/{walletAddress}", { key: null, path: `/x402/balance/${wallet.address}`, headers: { "SIGN-IN-WITH-X": header } });
  },
  "POST /x402/top-up": async () => {
    // Without a payment: the discovery answer, the provider's 402 body.
    await conforms("post", "/x402/top-up", { key: null, json: {} }, 402);
    const { header } = await evmPayment(evmWallet(), { asset: BASE_USDC, payTo: PAY_TO, value: 5_000_000n });
    expect((await conforms("post", "/x402/top-up", { key: null, json: {}, headers: { "PAYMENT-SIGNATURE": header } })).data.amountCredited).toBe(5);
  },
  "GET /x402/transactions/{walletAddress}": async () => {
    const { wallet, header } = await signIn();
    await conforms("get", "/x402/transactions/{walletAddress}", { key: null, path: `/x402/transactions/${wallet.address}`, headers: { "SIGN-IN-WITH-X": header } });
  },
  "POST /augment/scrape": async () => {
    expect((await conforms("post", "/augment/scrape", { json: example("post", "/augment/scrape", { url: `${peerBase}/article` }) })).content).toContain("Keepers");
  },
  "POST /augment/search": async () => {
    expect((await conforms("post", "/augment/search", { json: example("post", "/augment/search") })).results).toHaveLength(1);
  },
};

describe("the provider's document, walked", () => {
  it("has a walk for every operation it lists, and lists every walked operation", () => {
    expect(operations.length).toBe(49);
    const names = operations.map((o) => o.name);
    expect(names.filter((n) => !NOT_SERVED.has(n) && !WALK[n])).toEqual([]);
    expect(Object.keys(WALK).filter((n) => !names.includes(n))).toEqual([]);
    expect([...NOT_SERVED].filter((n) => !names.includes(n))).toEqual([]);
  });

  for (const { method, path, name } of operations) {
    if (NOT_SERVED.has(name)) {
      it(`${name} is not served (listed in NOT_SERVED: remove it from there once it is)`, async () => {
        const res = await send(method, path, { json: {} });
        await res.arrayBuffer();
        expect(res.status).toBe(404);
      });
      continue;
    }
    it(`${name} answers the provider's shape`, async () => {
      await WALK[name]!();
    }, 120_000);
  }
});

describe("the walk's checks can fail", () => {
  it("a body with a field the provider forbids, or without one it requires, fails", async () => {
    const validate = providerResponse("post", "/video/queue", 200)!;
    const body = await conforms("post", "/video/queue", { json: videoRequest("post", "/video/queue") });
    expect(validate(body)).toBeNull();
    expect(validate({ ...body, cost: { usd: 0, diem: 0 } })).toMatch(/additional/);
    const { queue_id: _id, ...withoutId } = body;
    expect(validate(withoutId)).toMatch(/queue_id/);
    const models = providerResponse("get", "/models", 200)!;
    const listed = await conforms("get", "/models", { key: null, query: { type: "tts" } });
    expect(models(listed)).toBeNull();
    expect(models({ ...listed, data: [{ ...listed.data[0], owned_by: "hearth" }] })).toMatch(/owned_by/);
  });
});
