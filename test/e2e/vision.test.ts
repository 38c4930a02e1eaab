import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type OpenAI from "openai";
import type { ChatCompletionContentPart } from "openai/resources/chat/completions";
import { PDFDocument } from "pdf-lib";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ModelEntry } from "../../src/config/modelRegistry.js";
import { encodeVideo } from "../../src/media/ffmpeg.js";
import { inspectModel } from "../../src/models/inspectModel.js";
import { getBalances, ledgerTotals } from "../../src/store/ledger.js";
import { countReservations } from "../../src/store/reservations.js";
import { listUsage } from "../../src/store/usage.js";
import { fixturesDir, post, startTestServer, tinyChatEntry, tinyVisionEntry, type TestServer } from "../helpers/testServer.js";

/**
 * Pictures and video in chat, on the tiny random-weight Idefics3/SmolVLM: the official client,
 * streamed and not, prompt tokens that grow with each picture (its tiles' image tokens), video
 * sampled to frames, the limits, billing of image tokens; a GGUF model refusing pictures with the
 * reason; an upstream that declares vision getting the parts unchanged.
 */

/** $100 per million input tokens and $200 per million output tokens: image tokens show in the charge. */
const PRICED = { input: { usd: 100, diem: 100 }, output: { usd: 200, diem: 200 } };
const MAX_UPLOAD_MB = 1;

let server: TestServer;
/** A loopback peer speaking the chat standard: it records each body and streams a fixed answer. */
let peer: Server;
const received: Record<string, unknown>[] = [];
let relay: TestServer;

beforeAll(async () => {
  peer = createServer(async (req, res) => {
    if (req.method === "GET" && req.url === "/picture.png") {
      res.writeHead(200, { "content-type": "image/png" }).end(
        await sharp(bands(512, 512), { raw: { width: 512, height: 512, channels: 3 } })
          .png()
          .toBuffer(),
      );
      return;
    }
    if (req.method !== "POST") {
      if (req.url?.endsWith("/models")) res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ object: "list", data: [] }));
      else res.writeHead(404).end();
      return;
    }
    received.push(JSON.parse(await readBody(req)));
    const chunk = (body: Record<string, unknown>) => `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 1, model: "peer-vision", ...body })}\n\n`;
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write(chunk({ choices: [{ index: 0, delta: { role: "assistant", content: "a picture" }, finish_reason: null }] }));
    res.write(chunk({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }));
    res.write(chunk({ choices: [], usage: { prompt_tokens: 900, completion_tokens: 2, total_tokens: 902 } }));
    res.end("data: [DONE]\n\n");
  });
  await new Promise<void>((resolve) => peer.listen(0, "127.0.0.1", resolve));
  const peerUrl = `http://127.0.0.1:${(peer.address() as AddressInfo).port}/v1`;
  const upstreamEntry = (id: string, features: Record<string, unknown>) =>
    ModelEntry.parse({ id, type: "text", backend: "upstream", upstream: { baseUrl: peerUrl, model: "peer-vision", contextSize: 16384, features } });

  [server, relay] = await Promise.all([
    startTestServer({
      models: [
        tinyVisionEntry(),
        tinyVisionEntry({ id: "tiny-vision-priced", pricing: PRICED }),
        tinyVisionEntry({ id: "tiny-vision-stills", vision: { maxImages: 2, maxImagePixels: 300 * 300, contextSize: 100 } }),
        tinyVisionEntry({ id: "tiny-vision-no-queue", pricing: PRICED, queue: { maxWaiting: 0 } }),
        tinyChatEntry(),
      ],
      config: { maxUploadMb: MAX_UPLOAD_MB },
    }),
    // This node fetches URLs (the operator's --web-scraping on): a picture's http(s) URL too.
    startTestServer({
      models: [upstreamEntry("peer-vision", { vision: true, maxImages: 4, videoInput: true }), upstreamEntry("peer-blind", {}), tinyVisionEntry()],
      config: { webScraping: "on" },
    }),
  ]);
});
afterAll(async () => {
  await Promise.all([server?.stop(), relay?.stop()]);
  await new Promise((resolve) => peer?.close(resolve));
});

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** Interleaved RGB of colour bands, different for each seed. */
function bands(width: number, height: number, seed = 0): Buffer {
  const rgb = Buffer.alloc(width * height * 3);
  for (let i = 0; i < width * height; i++) rgb.set([(i * 7 + seed * 40) % 256, Math.floor(i / width + seed * 13) % 256, (i % width) % 256], i * 3);
  return rgb;
}

async function picture(width: number, height: number, format: "png" | "jpeg" | "webp" | "gif" = "png", seed = 0): Promise<string> {
  const bytes = await sharp(bands(width, height, seed), { raw: { width, height, channels: 3 } })
    [format]()
    .toBuffer();
  return `data:image/${format};base64,${bytes.toString("base64")}`;
}

const image = (url: string, detail?: "auto" | "low" | "high"): ChatCompletionContentPart => ({ type: "image_url", image_url: { url, ...(detail ? { detail } : {}) } });
const text = (value: string): ChatCompletionContentPart => ({ type: "text", text: value });
const QUESTION = text("What is in this picture?");

async function ask(content: ChatCompletionContentPart[] | string, options: { model?: string; max_tokens?: number; client?: OpenAI } = {}) {
  const client = options.client ?? server.openai();
  return client.chat.completions.create({ model: options.model ?? "tiny-vision", messages: [{ role: "user", content }], max_tokens: options.max_tokens ?? 6, temperature: 0 });
}

/** The status and body of a refused request, raw: the details tree names the part. */
async function refusal(content: unknown[], options: { model?: string; target?: TestServer } = {}) {
  const res = await post(options.target ?? server, "/chat/completions", { model: options.model ?? "tiny-vision", messages: [{ role: "user", content }], max_tokens: 1 });
  return { status: res.status, body: (await res.json()) as { error: string } };
}

describe("hearth models add", () => {
  it("proposes a transformers text entry with vision for an Idefics3/SmolVLM directory", async () => {
    const inspected = await inspectModel(join(fixturesDir(), "tiny-vlm"));
    expect(inspected).toMatchObject({
      backend: "transformers",
      type: "text",
      facts: { modelType: "idefics3" },
      entry: { type: "text", backend: "transformers", vision: { maxImages: 4 } },
    });
  });
});

describe("GET /models", () => {
  it("declares what the vision models take, and the GGUF model none of it", async () => {
    const list = (await server.openai().models.list()).data as unknown as { id: string; model_spec: { capabilities: Record<string, unknown> } }[];
    const capabilities = (id: string) => list.find((m) => m.id === id)!.model_spec.capabilities;
    expect(capabilities("tiny-vision")).toMatchObject({ supportsVision: true, supportsMultipleImages: true, maxImages: 3, supportsVideoInput: true, maxVideos: 1 });
    expect(capabilities("tiny-vision-stills")).toMatchObject({ supportsVision: true, supportsMultipleImages: true, maxImages: 2, supportsVideoInput: false });
    expect(capabilities("tiny-chat")).toMatchObject({ supportsVision: false, supportsVideoInput: false });
    const relayed = (await relay.openai().models.list()).data as unknown as { id: string; model_spec: { capabilities: Record<string, unknown> } }[];
    expect(relayed.find((m) => m.id === "peer-vision")!.model_spec.capabilities).toMatchObject({ supportsVision: true, maxImages: 4, supportsVideoInput: true, maxVideos: 1 });
    expect(relayed.find((m) => m.id === "peer-blind")!.model_spec.capabilities).toMatchObject({ supportsVision: false });
  });
});

describe("an image question", () => {
  it("answers it, with each picture's image tokens in prompt_tokens (a second picture adds as many again)", async () => {
    const url = await picture(512, 512);
    const plain = await ask([QUESTION]);
    const one = await ask([image(url), QUESTION]);
    const two = await ask([image(url), image(await picture(512, 512, "png", 1)), QUESTION]);
    expect(one.choices[0]!.message.content!.length).toBeGreaterThan(0);
    expect(one.choices[0]!.finish_reason).toBe("length");
    expect(one.usage!.completion_tokens).toBe(6);
    // A 512×512 picture: resized to 128 px, four 64 px tiles and the global view, 16 image tokens each, plus their markers
    // (the text around a picture may merge into one token more or less: within 2).
    const imageTokens = one.usage!.prompt_tokens - plain.usage!.prompt_tokens;
    expect(imageTokens).toBeGreaterThanOrEqual(5 * 16);
    expect(Math.abs(two.usage!.prompt_tokens - one.usage!.prompt_tokens - imageTokens)).toBeLessThanOrEqual(2);
    // Loaded like every model: leased while answering, released after, its memory estimated (when asked), on the CPU provider.
    await server.models.estimate();
    const status = server.models.statusOf("tiny-vision");
    expect(status).toMatchObject({ state: "loaded", inFlight: 0, executionProvider: { providers: ["cpu"] } });
    expect(status.memory!.ramBytes).toBeGreaterThan(0);
    // The model reads the picture: another picture, another answer (greedy both times).
    const other = await ask([image(await picture(512, 512, "png", 3)), QUESTION]);
    expect(other.usage!.prompt_tokens).toBe(one.usage!.prompt_tokens);
    expect(other.choices[0]!.message.content).not.toBe(one.choices[0]!.message.content);
  });

  it("fetches a picture's http(s) URL where the operator allows it: the same picture, the same prompt", async () => {
    const pictureUrl = `http://127.0.0.1:${(peer.address() as AddressInfo).port}/picture.png`;
    const fetched = await ask([image(pictureUrl), QUESTION], { client: relay.openai() });
    const inline = await ask([image(await picture(512, 512)), QUESTION], { client: relay.openai() });
    expect(fetched.usage!.prompt_tokens).toBe(inline.usage!.prompt_tokens);
    expect(fetched.choices[0]!.message.content).toBe(inline.choices[0]!.message.content);
    const missing = await refusal([image(pictureUrl.replace("picture", "missing"))], { target: relay });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatch(/^messages\.0\.content\.0\.image_url\.url: the picture could not be fetched: HTTP 404/);
  });

  it("streams the same answer as it sends whole, with the same usage", async () => {
    const url = await picture(300, 200, "jpeg");
    const whole = await ask([image(url), QUESTION], { max_tokens: 10 });
    const stream = await server.openai().chat.completions.create({
      model: "tiny-vision",
      messages: [{ role: "user", content: [image(url), QUESTION] }],
      max_tokens: 10,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    });
    let content = "";
    let pieces = 0;
    let usage: OpenAI.CompletionUsage | undefined;
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta.content;
      if (delta) {
        content += delta;
        pieces++;
      }
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(pieces).toBeGreaterThan(1);
    expect(content).toBe(whole.choices[0]!.message.content);
    expect(finish).toBe("length");
    expect(usage).toMatchObject({ prompt_tokens: whole.usage!.prompt_tokens, completion_tokens: 10 });
  });

  it("reads PNG, JPEG, WebP and a GIF's first frame alike; detail low is one tile", async () => {
    const counts = [];
    for (const format of ["png", "jpeg", "webp", "gif"] as const)
      counts.push((await ask([image(await picture(200, 100, format)), QUESTION], { max_tokens: 1 })).usage!.prompt_tokens);
    expect(new Set(counts).size).toBe(1);
    const url = await picture(512, 512);
    const high = (await ask([image(url, "high"), QUESTION], { max_tokens: 1 })).usage!.prompt_tokens;
    const low = (await ask([image(url, "low"), QUESTION], { max_tokens: 1 })).usage!.prompt_tokens;
    const plain = (await ask([QUESTION], { max_tokens: 1 })).usage!.prompt_tokens;
    // One tile: its 16 image tokens, the <fake_token_around_image> pair and <global-img> (the text around it within a token).
    expect(Math.abs(low - plain - (16 + 3))).toBeLessThanOrEqual(1);
    expect(high).toBeGreaterThan(low);
  });

  it("answers text-only requests too, honours stop strings and n, and names the sampling fields it ignores", async () => {
    const base = await ask("Hello there", { max_tokens: 12 });
    const content = base.choices[0]!.message.content!;
    expect(content.length).toBeGreaterThan(4);
    const stop = content.slice(3, 5);
    const res = await post(server, "/chat/completions", {
      model: "tiny-vision",
      messages: [{ role: "user", content: "Hello there" }],
      max_tokens: 12,
      temperature: 0,
      stop: [stop],
      n: 2,
      top_p: 0.5,
      seed: 7,
      logit_bias: { 5: 10 },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-service-unsupported-parameters")).toBe("top_p,seed,logit_bias");
    const body = (await res.json()) as OpenAI.ChatCompletion;
    expect(body.choices).toHaveLength(2);
    for (const choice of body.choices) {
      expect(choice.message.content).toBe(content.slice(0, content.indexOf(stop)));
      expect(choice.finish_reason).toBe("stop");
    }
    const tooMany = await post(server, "/chat/completions", { model: "tiny-vision", messages: [{ role: "user", content: "x" }], n: 5 });
    expect(tooMany.status).toBe(400);
    // Legacy completions: the raw prompt, no template.
    const completion = await server.openai().completions.create({ model: "tiny-vision", prompt: "Once upon a time", max_tokens: 3, temperature: 0 });
    expect(completion.usage).toMatchObject({ completion_tokens: 3 });
    expect(completion.choices[0]!.text.length).toBeGreaterThan(0);
  });

  it("stops generating when a streaming client goes away, and charges what was produced", async () => {
    const { key, accountId } = server.createKey({ usd: 5 });
    const controller = new AbortController();
    const res = await fetch(`${server.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body: JSON.stringify({ model: "tiny-vision-priced", messages: [{ role: "user", content: [image(await picture(64, 64)), QUESTION] }], max_tokens: 1900, stream: true }),
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    // The role chunk, then the first piece of content.
    await reader.read();
    await reader.read();
    controller.abort();
    const deadline = Date.now() + 10_000;
    while (listUsage(server.db, accountId).length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    const [row] = listUsage(server.db, accountId);
    expect(row).toMatchObject({ status: 499, finishReason: "abort" });
    expect(row!.completionTokens).toBeGreaterThan(0);
    expect(row!.completionTokens).toBeLessThan(1900);
    const spent = 5 - getBalances(server.db, accountId).USD / 1e6;
    expect(spent).toBeCloseTo((row!.promptTokens * PRICED.input.usd + row!.completionTokens * PRICED.output.usd) / 1e6, 6);
  });
});

describe("a busy vision model", () => {
  it("answers a picture question past its queue 503 in the standard shape, and charges nothing", async () => {
    const busy = server.createKey({ usd: 5 });
    const controller = new AbortController();
    const first = await fetch(`${server.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${busy.key}` },
      body: JSON.stringify({ model: "tiny-vision-no-queue", messages: [{ role: "user", content: [image(await picture(64, 64)), QUESTION] }], max_tokens: 1900, stream: true }),
      signal: controller.signal,
    });
    const reader = first.body!.getReader();
    await reader.read();
    try {
      const { key, accountId } = server.createKey({ usd: 5 });
      const res = await post(
        server,
        "/chat/completions",
        { model: "tiny-vision-no-queue", messages: [{ role: "user", content: [image(await picture(64, 64)), QUESTION] }], max_tokens: 4 },
        { key },
      );
      expect(res.status).toBe(503);
      expect(((await res.json()) as { error: string }).error).toMatch(/tiny-vision-no-queue.*at capacity/);
      expect(getBalances(server.db, accountId).USD).toBe(5_000_000);
    } finally {
      controller.abort();
    }
  });
});

describe("a burst of picture questions whose clients leave", () => {
  it("charges exactly what each request produced and holds nothing once they are done", async () => {
    const { key, accountId } = server.createKey({ usd: 50 });
    const url = await picture(96, 96);
    const statuses: string[] = [];
    // Forty at once, streamed and whole; every other client leaves at its own moment (while its
    // picture is planned, while it waits in the queue, or mid-answer).
    await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const controller = new AbortController();
        if (i % 2 === 0) setTimeout(() => controller.abort(), (i * 37) % 900);
        try {
          const res = await fetch(`${server.baseUrl}/chat/completions`, {
            method: "POST",
            headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
            body: JSON.stringify({
              model: "tiny-vision-priced",
              stream: i % 3 !== 0,
              max_tokens: 200,
              messages: [{ role: "user", content: [image(url), text(`What is in picture ${i}?`)] }],
            }),
            signal: controller.signal,
          });
          await res.text();
          statuses.push(String(res.status));
        } catch {
          statuses.push("left");
        }
      }),
    );
    const deadline = Date.now() + 30_000;
    while ((countReservations(server.db) > 0 || listUsage(server.db, accountId).length < statuses.length - statuses.filter((s) => s === "left").length) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const rows = listUsage(server.db, accountId);
    // The burst did what it is for: some answered, some clients left mid-request.
    expect(statuses).toContain("200");
    expect(statuses).toContain("left");
    expect(rows.some((row) => row.status === 499)).toBe(true);
    expect(countReservations(server.db)).toBe(0);
    const charged = rows.reduce((sum, row) => sum + row.promptTokens * PRICED.input.usd + row.completionTokens * PRICED.output.usd, 0);
    expect(50_000_000 - getBalances(server.db, accountId).USD).toBe(charged);
    expect(ledgerTotals(server.db, accountId)).toEqual(getBalances(server.db, accountId));
  });
});

describe("an overlong prompt", () => {
  it("is refused by its length before the vision model's worker tokenizes it", async () => {
    // tiny-vision-stills' context holds 100 tokens; its tokenizer's longest piece is 25 bytes.
    const prompt = "a".repeat(100 * 25 + 1);
    const completion = await post(server, "/completions", { model: "tiny-vision-stills", prompt, max_tokens: 1 });
    expect(completion.status).toBe(400);
    expect(((await completion.json()) as { error: string }).error).toMatch(/^prompt: this prompt has more than 100 tokens/);
    const chat = await post(server, "/chat/completions", { model: "tiny-vision-stills", messages: [{ role: "user", content: prompt }], max_tokens: 1 });
    expect(chat.status).toBe(400);
    expect(((await chat.json()) as { error: string }).error).toMatch(/^messages\.0\.content: 2501 characters cannot fit/);
  });
});

describe("the Responses API", () => {
  it("reads input_image parts as chat's image_url parts", async () => {
    const url = await picture(512, 512);
    const respond = (content: unknown[]) =>
      server.openai().responses.create({ model: "tiny-vision", input: [{ role: "user", content }] as never, max_output_tokens: 4, temperature: 0 });
    const plain = await respond([{ type: "input_text", text: "What is in this picture?" }]);
    const seen = await respond([
      { type: "input_image", image_url: url, detail: "auto" },
      { type: "input_text", text: "What is in this picture?" },
    ]);
    const low = await respond([
      { type: "input_image", image_url: url, detail: "low" },
      { type: "input_text", text: "What is in this picture?" },
    ]);
    expect(seen.usage!.input_tokens - plain.usage!.input_tokens).toBeGreaterThanOrEqual(5 * 16);
    expect(low.usage!.input_tokens).toBeLessThan(seen.usage!.input_tokens);
    expect(seen.output_text.length).toBeGreaterThan(0);
  });
});

describe("video", () => {
  it("samples a video_url part to frames, each a tile of image tokens", async () => {
    const frames = Array.from({ length: 16 }, (_, i) => bands(96, 64, i));
    const mp4 = await encodeVideo(frames, 96, 64, 8);
    const video = { type: "video_url", video_url: { url: `data:video/mp4;base64,${mp4.toString("base64")}` } } as unknown as ChatCompletionContentPart;
    const plain = await ask([text("What happens?")], { max_tokens: 1 });
    const watched = await ask([video, text("What happens?")], { max_tokens: 4 });
    // Four frames, one tile each (16 image tokens and 3 markers), plus the lines that say when each frame is from.
    expect(watched.usage!.prompt_tokens - plain.usage!.prompt_tokens).toBeGreaterThan(4 * 19);
    expect(watched.choices[0]!.message.content!.length).toBeGreaterThan(0);

    const stills = await refusal([video], { model: "tiny-vision-stills" });
    expect(stills.status).toBe(400);
    expect(stills.body.error).toMatch(/^messages\.0\.content\.0\.type: the model "tiny-vision-stills" does not support video input \(video_url parts\)/);
    const broken = await refusal([{ type: "video_url", video_url: { url: "data:video/mp4;base64,AAAAAAAA" } }]);
    expect(broken.status).toBe(400);
    expect(broken.body.error).toMatch(/^messages\.0\.content\.0\.video_url\.url: not a video this node can decode/);
  });
});

describe("scanned documents", () => {
  it("shows a vision model the page pictures of a PDF without text, each counted as an image", async () => {
    const scan = await PDFDocument.create();
    for (const seed of [0, 1]) {
      const png = await sharp(bands(200, 260, seed), { raw: { width: 200, height: 260, channels: 3 } })
        .png()
        .toBuffer();
      const page = scan.addPage([200, 260]);
      page.drawImage(await scan.embedPng(png), { x: 0, y: 0, width: 200, height: 260 });
    }
    const pdf = Buffer.from(await scan.save());
    const file = { type: "file", file: { filename: "scan.pdf", file_data: `data:application/pdf;base64,${pdf.toString("base64")}` } } as ChatCompletionContentPart;
    const plain = await ask([text("Summarise the document.")], { max_tokens: 1 });
    const read = await ask([file, text("Summarise the document.")], { max_tokens: 2 });
    // Two pages, each at least its global view (16 image tokens) and tiles.
    expect(read.usage!.prompt_tokens - plain.usage!.prompt_tokens).toBeGreaterThan(2 * (16 + 3) * 2);
    const onePicture = await ask([image(await picture(200, 260)), text("Summarise the document.")], { max_tokens: 1 });
    const perPage = onePicture.usage!.prompt_tokens - plain.usage!.prompt_tokens;
    expect(read.usage!.prompt_tokens - plain.usage!.prompt_tokens).toBeGreaterThan(2 * perPage);
    // The pages count against the model's three images.
    const tooMany = await refusal([file, image(await picture(16, 16)), image(await picture(16, 16))]);
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error).toBe('messages.0.content.2: this is image 4 of the request; the model "tiny-vision" takes at most 3');
  });
});

describe("limits and errors", () => {
  it("refuses pictures on a GGUF model with the reason and the way to serve them", async () => {
    const { status, body } = await refusal([text("look"), image(await picture(32, 32))], { model: "tiny-chat" });
    expect(status).toBe(400);
    expect(body.error).toMatch(/^messages\.0\.content\.1\.type: the model "tiny-chat" does not support images \(image_url parts\)/);
    expect(body.error).toContain("node-llama-cpp 3.22");
    expect(body.error).toContain("node-llama-cpp 4");
    expect(body.error).toMatch(/ONNX vision-language model .* or an upstream model that declares vision/);
    const error = await ask([image(await picture(32, 32))], { model: "tiny-chat" }).catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 400 });
  });

  it("answers 413 for a picture over the upload limit or the pixel limit, 400 for one it cannot decode, too many, or a URL it may not fetch", async () => {
    const noise = Buffer.alloc(800 * 800 * 3).map((_, i) => (i * 2654435761) >>> 24);
    const big = await sharp(noise, { raw: { width: 800, height: 800, channels: 3 } })
      .png({ compressionLevel: 0 })
      .toBuffer();
    expect(big.length).toBeGreaterThan(MAX_UPLOAD_MB * 1e6);
    const oversized = await refusal([image(`data:image/png;base64,${big.toString("base64")}`)]);
    expect(oversized.status).toBe(413);
    expect(oversized.body.error).toMatch(/^messages\.0\.content\.0\.image_url\.url: the picture is .* MB; this node accepts at most 1\.00 MB/);

    const wide = await refusal([text("x"), image(await picture(400, 300))], { model: "tiny-vision-stills" });
    expect(wide.status).toBe(413);
    expect(wide.body.error).toBe("messages.0.content.1.image_url.url: the picture is 400×300 pixels; this model takes at most 90000 pixels (vision.maxImagePixels)");

    // A picture's image tokens count toward the context like any prompt token.
    const long = await refusal([image(await picture(256, 256)), QUESTION], { model: "tiny-vision-stills" });
    expect(long.status).toBe(400);
    expect(long.body.error).toMatch(/^messages: the prompt is \d+ tokens but this model's context holds 100/);
    const fits = await refusal([image(await picture(256, 256), "low"), QUESTION], { model: "tiny-vision-stills" });
    expect(fits.status).toBe(200);

    const garbage = await refusal([image(`data:image/png;base64,${Buffer.from("not a picture at all").toString("base64")}`)]);
    expect(garbage.status).toBe(400);
    expect(garbage.body.error).toMatch(/^messages\.0\.content\.0\.image_url\.url: not a picture this node can decode \(PNG, JPEG, WebP or GIF\)/);

    const small = await picture(16, 16);
    const many = await refusal([image(small), image(small), image(small), image(small)]);
    expect(many.status).toBe(400);
    expect(many.body.error).toBe('messages.0.content.3: this is image 4 of the request; the model "tiny-vision" takes at most 3');

    const remote = await refusal([image("https://example.com/cat.png")]);
    expect(remote.status).toBe(400);
    expect(remote.body.error).toMatch(/^messages\.0\.content\.0\.image_url\.url: this node does not fetch picture URLs \(the operator enables it with --web-scraping on\)/);

    const inSystem = await post(server, "/chat/completions", {
      model: "tiny-vision",
      messages: [
        { role: "system", content: [image(small)] },
        { role: "user", content: "x" },
      ],
    });
    expect(inSystem.status).toBe(400);
  });
});

describe("billing", () => {
  it("charges image tokens as input tokens: the charge grows with each picture", async () => {
    const { key, accountId } = server.createKey({ usd: 5 });
    const client = server.openai(key);
    const url = await picture(256, 256);
    const plain = await ask([QUESTION], { model: "tiny-vision-priced", client, max_tokens: 3 });
    const one = await ask([image(url), QUESTION], { model: "tiny-vision-priced", client, max_tokens: 3 });
    const two = await ask([image(url), image(url), QUESTION], { model: "tiny-vision-priced", client, max_tokens: 3 });
    const cost = (c: OpenAI.ChatCompletion) => (c as unknown as { cost: { usd: number } }).cost.usd;
    const expected = (c: OpenAI.ChatCompletion) => (c.usage!.prompt_tokens * PRICED.input.usd + c.usage!.completion_tokens * PRICED.output.usd) / 1e6;
    for (const completion of [plain, one, two]) expect(cost(completion)).toBeCloseTo(expected(completion), 9);
    // Each 256×256 picture is five tiles of image tokens: about $0.0093 more, twice.
    expect(one.usage!.prompt_tokens - plain.usage!.prompt_tokens).toBeGreaterThan(80);
    expect(cost(one) - cost(plain)).toBeGreaterThan((80 * PRICED.input.usd) / 1e6);
    expect(cost(two) - cost(one)).toBeGreaterThan((80 * PRICED.input.usd) / 1e6);
    const spent = 5 - getBalances(server.db, accountId).USD / 1e6;
    expect(spent).toBeCloseTo(cost(plain) + cost(one) + cost(two), 6);
  });
});

describe("an upstream that declares vision", () => {
  it("gets image_url and video_url parts exactly as the caller wrote them", async () => {
    const url = await picture(40, 30, "webp");
    const parts = [
      { type: "text", text: "Compare these." },
      { type: "image_url", image_url: { url, detail: "high" } },
      { type: "image_url", image_url: { url: "https://example.com/cat.png" } },
      { type: "video_url", video_url: { url: "https://example.com/clip.mp4" } },
    ];
    received.length = 0;
    const completion = await relay.openai().chat.completions.create({
      model: "peer-vision",
      messages: [{ role: "user", content: parts as ChatCompletionContentPart[] }],
      max_tokens: 5,
    });
    expect(completion.choices[0]!.message.content).toBe("a picture");
    expect(completion.usage!.prompt_tokens).toBe(900);
    expect(received).toHaveLength(1);
    const messages = received[0]!.messages as { role: string; content: unknown }[];
    expect(messages.at(-1)).toEqual({ role: "user", content: parts });

    // A scanned PDF: its page pictures go to the upstream as PNG data URLs inside the file's wrapper.
    received.length = 0;
    const scan = await PDFDocument.create();
    const png = await sharp(bands(120, 90), { raw: { width: 120, height: 90, channels: 3 } })
      .png()
      .toBuffer();
    scan.addPage([120, 90]).drawImage(await scan.embedPng(png), { x: 0, y: 0, width: 120, height: 90 });
    const pdf = Buffer.from(await scan.save()).toString("base64");
    await relay.openai().chat.completions.create({
      model: "peer-vision",
      messages: [{ role: "user", content: [{ type: "file", file: { filename: "scan.pdf", file_data: `data:application/pdf;base64,${pdf}` } } as ChatCompletionContentPart] }],
      max_tokens: 5,
    });
    const relayedParts = (received[0]!.messages as { content: { type: string; text?: string; image_url?: { url: string } }[] }[]).at(-1)!.content;
    expect(relayedParts.map((p) => p.type)).toEqual(["text", "text", "image_url", "text"]);
    expect(relayedParts[0]!.text).toBe('<file name="scan.pdf">');
    expect(relayedParts[2]!.image_url!.url).toMatch(/^data:image\/png;base64,/);
    const page = await sharp(Buffer.from(relayedParts[2]!.image_url!.url.split(",")[1]!, "base64")).metadata();
    expect([page.width, page.height]).toEqual([120, 90]);

    const blind = await refusal([image(url)], { model: "peer-blind", target: relay });
    expect(blind.status).toBe(400);
    expect(blind.body.error).toMatch(
      /^messages\.0\.content\.0\.type: the model "peer-blind" does not support images \(image_url parts\): the upstream model is not declared to see/,
    );
  });
});
