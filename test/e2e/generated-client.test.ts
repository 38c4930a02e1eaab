import createClient from "openapi-fetch";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { grantCredits } from "../../src/store/ledger.js";
import { ensureWalletAccount } from "../../src/store/wallets.js";
import type { paths } from "../generated/provider-openapi.js";
import { parameterExample, requestExample } from "../helpers/providerExamples.js";
import { PROVIDER_NODE_WALLET, PROVIDER_OPERATIONS_NOT_SERVED, type ProviderNode, startProviderNode } from "../helpers/providerNode.js";
import { providerDocument } from "../helpers/providerSchema.js";
import { evmPayment, evmSignIn, evmWallet } from "../helpers/wallets.js";

/**
 * A client generated from the provider's document (openapi-typescript types in test/generated,
 * `npm run client:generate`; openapi-fetch) calls every operation this node serves with the
 * provider's own examples, ids adjusted to the node's models and the resources made on the way,
 * and checks each answer's status and key fields. The calls type-check against the provider's
 * types: a path, method or parameter the provider does not have does not compile.
 */

type Json = Record<string, any>;
const doc = providerDocument();

let provider: ProviderNode;
let client: ReturnType<typeof createClient<paths>>;
let anonymous: ReturnType<typeof createClient<paths>>;
const called = new Set<string>();

beforeAll(async () => {
  provider = await startProviderNode();
  const record = { onRequest: ({ schemaPath, request }: { schemaPath: string; request: Request }) => void called.add(`${request.method} ${schemaPath}`) };
  client = createClient<paths>({ baseUrl: provider.node.baseUrl, headers: { authorization: `Bearer ${provider.node.adminKey}` } });
  anonymous = createClient<paths>({ baseUrl: provider.node.baseUrl });
  client.use(record);
  anonymous.use(record);
}, 120_000);
afterAll(() => provider?.stop());

/** The provider's example body for an operation, with this node's adjustments (typed by where it is used). */
const example = <T>(method: string, path: string, overrides: Json = {}, contentType?: string): T => ({ ...requestExample(doc, method, path, contentType), ...overrides }) as T;
const multipart = (fields: Json, file: { data: Buffer; name: string; type: string }) => {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) if (k !== "file") form.append(k, String(v));
  form.append("file", new Blob([new Uint8Array(file.data)], { type: file.type }), file.name);
  return form;
};
/** The provider's 10s/720p video example on the tiny video model (1s, 64p). */
const video = <T>(method: string, path: string, overrides: Json = {}): T => {
  const body = example<Json>(method, path, { model: "tiny-video", ...overrides });
  if (body.duration !== undefined) body.duration = "1s";
  if (body.resolution !== undefined) body.resolution = "64p";
  return body as T;
};

async function createdKeyId(): Promise<string> {
  const { data, response } = await client.POST("/api_keys", { body: example("post", "/api_keys") });
  expect(response.status).toBe(200);
  return data!.data.id;
}

async function finishedVideo(): Promise<string> {
  const { data } = await client.POST("/video/queue", { body: video("post", "/video/queue") });
  const queueId = data!.queue_id;
  for (let i = 0; i < 240; i++) {
    const { response } = await client.POST("/video/retrieve", { body: video("post", "/video/retrieve", { queue_id: queueId }), parseAs: "arrayBuffer" });
    if (response.headers.get("content-type")?.startsWith("video/mp4")) return queueId;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error("the video never completed");
}

const signIn = async (wallet = evmWallet()) => ({ wallet, header: await evmSignIn(wallet, { domain: new URL(provider.node.url).host }) });

describe("the generated client, on every served operation", () => {
  it("chat, responses", async () => {
    const chat = await client.POST("/chat/completions", { body: example("post", "/chat/completions", { model: "tiny-chat", max_tokens: 8, temperature: 0 }) });
    expect(chat.response.status).toBe(200);
    expect(chat.data!.choices?.[0]?.message?.role).toBe("assistant");
    expect(chat.data!.model).toBe("tiny-chat");
    const response = await client.POST("/responses", { body: example("post", "/responses", { model: "tiny-chat", max_output_tokens: 8, temperature: 0 }) });
    expect(response.response.status).toBe(200);
    expect(response.data!.object).toBe("response");
  });

  it("images", async () => {
    const generated = await client.POST("/image/generate", { body: example("post", "/image/generate", { model: "tiny-sd" }) });
    expect(generated.response.status).toBe(200);
    expect((generated.data as { images: string[] }).images).toHaveLength(1);
    const simple = await client.POST("/images/generations", { body: example("post", "/images/generations", { model: "tiny-sd" }) });
    expect(simple.data!.data).toHaveLength(1);
    const styles = await anonymous.GET("/image/styles");
    expect(Array.isArray(styles.data!.data)).toBe(true);
  });

  it("models, traits, compatibility mapping", async () => {
    const models = await anonymous.GET("/models", { params: { query: { type: "tts" } } });
    expect(models.data!.data.map((m) => m.id)).toEqual(["tts-kokoro"]);
    expect(models.data!.data[0]!.owned_by).toBe("venice.ai");
    expect(models.data!.data[0]!.model_spec.capabilities?.supportsFunctionCalling).toBe(false);
    const traits = await anonymous.GET("/models/traits", { params: { query: { type: "image" } } });
    expect(traits.data!.data).toMatchObject({ default: "tiny-sd" });
    const mapping = await anonymous.GET("/models/compatibility_mapping", { params: { query: { type: "text" } } });
    expect(mapping.response.status).toBe(200);
  });

  it("API keys: create, list, get, update, delete, rate limits and their log", async () => {
    const id = await createdKeyId();
    const list = await client.GET("/api_keys");
    expect(list.data!.data.map((k) => k.id)).toContain(id);
    const one = await client.GET("/api_keys/{id}", { params: { path: { id } } });
    expect(one.data!.data.description).toBe("Example API Key");
    const updated = await client.PATCH("/api_keys", { body: example("patch", "/api_keys", { id }) });
    expect(updated.data!.data.id).toBe(id);
    const limits = await client.GET("/api_keys/rate_limits");
    expect(limits.data!.data.accessPermitted).toBe(true);
    const log = await client.GET("/api_keys/rate_limits/log");
    expect(Array.isArray(log.data!.data)).toBe(true);
    const deleted = await client.DELETE("/api_keys", { params: { query: { id } } });
    expect(deleted.data!.success).toBe(true);
  });

  it("wallet keys: a token, signed by a wallet with credit, for a key", async () => {
    const wallet = evmWallet();
    grantCredits(provider.node.db, ensureWalletAccount(provider.node.db, wallet.address, "evm"), "USD", 1_000_000, "test");
    const token = (await anonymous.GET("/api_keys/generate_web3_key")).data!.data.token;
    const signature = await wallet.signMessage({ message: token });
    const created = await anonymous.POST("/api_keys/generate_web3_key", { body: example("post", "/api_keys/generate_web3_key", { address: wallet.address, token, signature }) });
    expect(created.response.status).toBe(200);
    expect(created.data!.data.apiKey).toMatch(/^hth_/);
  });

  it("characters and their reviews", async () => {
    const slug = String(parameterExample(doc, "get", "/characters/{slug}", "slug"));
    const list = await client.GET("/characters");
    expect(list.data!.data.map((c) => c.slug)).toEqual([slug]);
    const one = await client.GET("/characters/{slug}", { params: { path: { slug } } });
    expect(one.data!.data.name).toBe("Alan Watts");
    const reviews = await client.GET("/characters/{slug}/reviews", { params: { path: { slug } } });
    expect(reviews.data!.summary).toEqual({ averageRating: 0, totalReviews: 0 });
  });

  it("embeddings", async () => {
    const { data } = await client.POST("/embeddings", { body: example("post", "/embeddings", { model: "tiny-embedding" })! });
    expect(data!.data[0]!.embedding.length).toBeGreaterThan(0);
    expect(data!.usage.prompt_tokens).toBeGreaterThan(0);
  });

  it("speech, transcription, voice cloning", async () => {
    // af_sky is not one of the tiny Kokoro's voices.
    const speech = await client.POST("/audio/speech", { body: example("post", "/audio/speech", { model: "tts-kokoro", voice: "af_heart" }), parseAs: "arrayBuffer" });
    expect(speech.response.headers.get("content-type")).toMatch(/^audio\/mpeg/);
    expect((speech.data as ArrayBuffer).byteLength).toBeGreaterThan(100);
    const wav = { data: provider.spokenWav, name: "speech.wav", type: "audio/wav" };
    const transcribed = await client.POST("/audio/transcriptions", {
      body: example("post", "/audio/transcriptions", { model: "tiny-whisper" }, "multipart/form-data"),
      bodySerializer: (body) => multipart(body as Json, wav),
    });
    expect(transcribed.response.status).toBe(200);
    expect(typeof (transcribed.data as { text: string }).text).toBe("string");
    const cloned = await client.POST("/audio/voices", {
      body: example("post", "/audio/voices", { model: "tts-kokoro" }, "multipart/form-data"),
      bodySerializer: (body) => multipart(body as Json, wav),
    });
    expect(cloned.response.status).toBe(200);
    expect(cloned.data!.id).toBeTypeOf("string");
  });

  it("video: quote, queue, retrieve, complete, and transcriptions of a fetched video", async () => {
    const quote = await client.POST("/video/quote", { body: video("post", "/video/quote") });
    expect(quote.data!.quote).toBeGreaterThanOrEqual(0);
    const queueId = await finishedVideo();
    const retrieved = await client.POST("/video/retrieve", { body: video("post", "/video/retrieve", { queue_id: queueId }), parseAs: "arrayBuffer" });
    expect(retrieved.response.headers.get("content-type")).toMatch(/^video\/mp4/);
    const completed = await client.POST("/video/complete", { body: video("post", "/video/complete", { queue_id: queueId }) });
    expect(completed.data!.success).toBe(true);
    const transcript = await client.POST("/video/transcriptions", { body: example("post", "/video/transcriptions", { url: `${provider.peerBase}/talk.mp4` }) });
    expect(transcript.response.status).toBe(200);
    expect(typeof (transcript.data as { transcript: string }).transcript).toBe("string");
  });

  it("images in: upscale (base64 and multipart), background removal (a fetched picture), edit and multi-edit", async () => {
    const picture = provider.picture;
    const upscaled = await client.POST("/image/upscale", { body: example("post", "/image/upscale", { image: picture.toString("base64") }), parseAs: "arrayBuffer" });
    expect(upscaled.response.status).toBe(200);
    expect(upscaled.response.headers.get("content-type")).toBe("image/png");
    const form = new FormData();
    form.append("scale", "4");
    form.append("image", new Blob([new Uint8Array(picture)], { type: "image/png" }), "picture.png");
    const multipartUpscale = await client.POST("/image/upscale", { body: example("post", "/image/upscale"), bodySerializer: () => form, parseAs: "arrayBuffer" });
    expect(multipartUpscale.response.status).toBe(200);
    const cut = await client.POST("/image/background-remove", {
      body: example("post", "/image/background-remove", { image_url: `${provider.peerBase}/picture.png` }),
      parseAs: "arrayBuffer",
    });
    expect(cut.response.status).toBe(200);
    expect(cut.response.headers.get("content-type")).toBe("image/png");
    const edited = await client.POST("/image/edit", { body: example("post", "/image/edit", { image: picture.toString("base64"), model: "tiny-sd" }), parseAs: "arrayBuffer" });
    expect(edited.response.status).toBe(200);
    const multi = await client.POST("/image/multi-edit", {
      body: example("post", "/image/multi-edit", { images: [picture.toString("base64")], modelId: "tiny-sd" }),
      parseAs: "arrayBuffer",
    });
    expect(multi.response.status).toBe(200);
  });

  it("audio jobs: quote, queue, retrieve until done, complete (long speech on the speech model)", async () => {
    // The provider's examples are a music model's: the speech model takes the text, a voice of its own and no duration.
    const speechJob = <T>(path: string, overrides: Json = {}): T => {
      const body = example<Json>("post", path, { model: "tts-kokoro", ...overrides });
      for (const name of ["duration_seconds", "lyrics_prompt", "force_instrumental", "lyrics_optimizer", "loop"]) delete body[name];
      if (body.voice !== undefined) body.voice = "af_heart";
      return body as T;
    };
    const quote = await client.POST("/audio/quote", { body: speechJob("/audio/quote") });
    expect(quote.data!.quote).toBeGreaterThanOrEqual(0);
    const queued = await client.POST("/audio/queue", { body: speechJob("/audio/queue") });
    expect(queued.data!.status).toBe("QUEUED");
    const queueId = queued.data!.queue_id;
    let contentType = "";
    for (let i = 0; i < 200 && !contentType.startsWith("audio/"); i++) {
      const polled = await client.POST("/audio/retrieve", { body: speechJob("/audio/retrieve", { queue_id: queueId }), parseAs: "arrayBuffer" });
      contentType = polled.response.headers.get("content-type") ?? "";
      if (!contentType.startsWith("audio/")) await new Promise((r) => setTimeout(r, 100));
    }
    expect(contentType).toBe("audio/mpeg");
    const completed = await client.POST("/audio/complete", { body: speechJob("/audio/complete", { queue_id: queueId }) });
    expect(completed.data!.success).toBe(true);
  });

  it("augment: text parser, scrape, search", async () => {
    const parsed = await client.POST("/augment/text-parser", {
      body: { file: "notes.txt" },
      bodySerializer: () => multipart({}, { data: Buffer.from("The last keeper left the rock in 1998.\n"), name: "notes.txt", type: "text/plain" }),
    });
    expect((parsed.data as { text: string }).text).toContain("1998");
    const scraped = await client.POST("/augment/scrape", { body: example("post", "/augment/scrape", { url: `${provider.peerBase}/article` }) });
    expect(scraped.data!.content).toContain("Keepers");
    const searched = await client.POST("/augment/search", { body: example("post", "/augment/search") });
    expect(searched.data!.results.map((r) => r.title)).toEqual(["AI"]);
  });

  it("billing", async () => {
    const balance = await client.GET("/billing/balance");
    expect(balance.data!.canConsume).toBe(true);
    // Only its 410 is documented (the endpoint is gone).
    const usage = await client.GET("/billing/usage");
    expect(usage.response.status).toBe(410);
    const analytics = await client.GET("/billing/usage-analytics", { params: { query: { lookback: "7d" } } });
    expect(analytics.data!.lookback).toBe("7d");
    const history = await client.GET("/billing/usage-history", { params: { query: { pageSize: 10 } } });
    expect(Array.isArray((history.data as { data: unknown[] }).data)).toBe(true);
  });

  it("crypto RPC: the networks, one call and a batch", async () => {
    const networks = await anonymous.GET("/crypto/rpc/networks");
    const network = String(parameterExample(doc, "post", "/crypto/rpc/{network}", "network"));
    expect(networks.data!.networks).toContain(network);
    const examples = doc.paths["/crypto/rpc/{network}"].post.requestBody.content["application/json"].examples;
    const single = await client.POST("/crypto/rpc/{network}", { params: { path: { network } }, body: examples.singleRequest.value });
    expect(single.data).toMatchObject({ jsonrpc: "2.0", id: 1, result: "0x1" });
    const batch = await client.POST("/crypto/rpc/{network}", { params: { path: { network } }, body: examples.batchRequest.value });
    expect((batch.data as unknown[]).length).toBe(2);
  });

  it("x402: the top-up's requirements, a top-up, then the wallet's balance and transactions", async () => {
    const required = await anonymous.POST("/x402/top-up", { body: {} });
    expect(required.response.status).toBe(402);
    expect(required.error).toMatchObject({ x402Version: 2, accepts: [expect.objectContaining({ payTo: PROVIDER_NODE_WALLET.payTo })] });
    const wallet = evmWallet();
    const { header } = await evmPayment(wallet, { asset: PROVIDER_NODE_WALLET.baseUsdc, payTo: PROVIDER_NODE_WALLET.payTo, value: 6_000_000n });
    const paid = await anonymous.POST("/x402/top-up", { body: {}, params: { header: { "PAYMENT-SIGNATURE": header } } });
    expect(paid.data!.data.amountCredited).toBe(6);
    const { header: siwx } = await signIn(wallet);
    const balance = await anonymous.GET("/x402/balance/{walletAddress}", { params: { path: { walletAddress: wallet.address }, header: { "SIGN-IN-WITH-X": siwx } } });
    expect(balance.data!.data.balanceUsd).toBe(6);
    const transactions = await anonymous.GET("/x402/transactions/{walletAddress}", {
      params: { path: { walletAddress: wallet.address }, header: { "SIGN-IN-WITH-X": (await signIn(wallet)).header } },
    });
    expect(transactions.data!.data.transactions.map((t) => t.type)).toEqual(["TOP_UP"]);
  });

  it("called every operation of the provider's document this node serves", () => {
    const served = Object.entries(doc.paths as Json).flatMap(([path, item]) =>
      Object.keys(item as Json)
        .filter((m) => ["get", "post", "put", "patch", "delete"].includes(m))
        .map((m) => `${m.toUpperCase()} ${path}`)
        .filter((name) => !PROVIDER_OPERATIONS_NOT_SERVED.has(name)),
    );
    expect(served.length).toBe(49);
    expect(served.filter((name) => !called.has(name))).toEqual([]);
  });
});
