import OpenAI from "openai";
import type { ChatCompletionContentPart } from "openai/resources/chat/completions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encodeAudio } from "../../src/media/ffmpeg.js";
import { floatToPcm16, wavHeader } from "../../src/media/pcm.js";
import { findActiveKey, updateApiKey } from "../../src/store/apiKeys.js";
import { makeDocx, makePdf, makePptx, makeXlsx } from "../helpers/documents.js";
import { post, startTestServer, tinyChatEntry, tinyWhisperEntry, type TestServer } from "../helpers/testServer.js";
import { listLedgerEntries } from "../../src/store/ledger.js";

/** $0.0001 per audio second on the transcription model the audio-capable chat model names. */
const PRICED_ASR = { id: "whisper-priced", pricing: { per_audio_second: { usd: 0.0001, diem: 0.0001 } } };
/** Small limits, so the 413 and 400 for size are cheap to reach. */
const MAX_UPLOAD_MB = 0.2;
const MAX_FILE_CHARS = 3000;

let server: TestServer;
/** A node with no speech-to-text model at all. */
let deaf: TestServer;
/** Two seconds of a tone gliding up, as 16 kHz mono WAV. */
let wav: Buffer;

beforeAll(async () => {
  [server, deaf] = await Promise.all([
    startTestServer({
      models: [
        tinyChatEntry(),
        tinyChatEntry({ id: "tiny-chat-audio", audioInput: { transcriptionModel: "whisper-priced" } }),
        tinyChatEntry({ id: "tiny-chat-priced", pricing: { input: { usd: 1, diem: 1 }, output: { usd: 2, diem: 2 } } }),
        tinyChatEntry({ id: "tiny-chat-short-ears", audioInput: { transcriptionModel: "whisper-one-second" } }),
        tinyWhisperEntry(),
        tinyWhisperEntry(PRICED_ASR),
        tinyWhisperEntry({ id: "whisper-one-second", transcription: { maxAudioSeconds: 1 } }),
      ],
      config: { maxUploadMb: MAX_UPLOAD_MB, maxFileChars: MAX_FILE_CHARS },
    }),
    startTestServer({ models: [tinyChatEntry()] }),
  ]);
  const rate = 16_000;
  const samples = new Float32Array(rate * 2).map((_, i) => 0.4 * Math.sin(2 * Math.PI * (220 + i / 80) * (i / rate)));
  const pcm = floatToPcm16(samples);
  wav = Buffer.concat([wavHeader(rate, pcm.length), pcm]);
});
afterAll(() => Promise.all([server?.stop(), deaf?.stop()]));

const dataUrl = (mime: string, data: Buffer | string) => `data:${mime};base64,${Buffer.from(data).toString("base64")}`;
const filePart = (file_data: string, filename?: string) => ({ type: "file", file: { file_data, ...(filename ? { filename } : {}) } }) as ChatCompletionContentPart;
const text = (value: string) => ({ type: "text", text: value }) as ChatCompletionContentPart;

async function promptTokens(content: ChatCompletionContentPart[], model = "tiny-chat", client = server.openai()): Promise<number> {
  const completion = await client.chat.completions.create({ model, messages: [{ role: "user", content }], max_tokens: 1, temperature: 0 });
  return completion.usage!.prompt_tokens;
}

/**
 * The status and body of a refused request. Raw HTTP: the openai client keeps only the body's
 * `error` string (it checks that string below); the detailed `details` tree is read here.
 */
async function refusal(content: unknown[], options: { model?: string; key?: string; server?: TestServer } = {}) {
  const target = options.server ?? server;
  const res = await fetch(`${target.baseUrl}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${options.key ?? target.adminKey}` },
    body: JSON.stringify({ model: options.model ?? "tiny-chat", messages: [{ role: "user", content }], max_tokens: 1 }),
  });
  return { status: res.status, body: (await res.json()) as { error: string; code?: string; details?: Record<string, any> } };
}

/** The _errors of messages.0.content.<part>.<...path>. */
const fieldErrors = (details: Record<string, any> | undefined, part: number, ...path: string[]) =>
  path.reduce((node, key) => node?.[key], details?.messages?.["0"]?.content?.[String(part)])?._errors as string[] | undefined;

describe("file parts: the document's text reaches the model", () => {
  // Equal prompt token counts for the file and for the text it should become: the extraction, wrapper included, is what the model read.
  it.each([
    [
      "PDF (pdf-lib)",
      async () => dataUrl("application/pdf", await makePdf(["Invoice 42 for Hearth", "Total due: seven apricots"])),
      "invoice.pdf",
      "Invoice 42 for Hearth\nTotal due: seven apricots",
    ],
    [
      "DOCX (docx)",
      async () => dataUrl("application/octet-stream", await makeDocx(["Minutes", "The zebra committee met."])),
      "minutes.docx",
      "Minutes\n\nThe zebra committee met.",
    ],
    [
      "XLSX (exceljs)",
      async () =>
        dataUrl(
          "",
          await makeXlsx({
            Stock: [
              ["Fruit", "Count"],
              ["Kiwi", 12],
            ],
          }),
        ),
      "stock.xlsx",
      'Sheet "Stock":\nFruit,Count\nKiwi,12',
    ],
    ["CSV", async () => dataUrl("text/csv", "fruit;count\nfig;3\n"), "fruit.csv", "fruit,count\nfig,3"],
    ["Markdown", async () => dataUrl("text/markdown", "# Plan\r\n\r\n- ship the lychee build\r\n"), "plan.md", "# Plan\n\n- ship the lychee build"],
    [
      "HTML",
      async () => dataUrl("text/html", "<html><head><title>Page</title></head><body><h1>Durian</h1><p>facts</p><script>x()</script></body></html>"),
      "page.html",
      "Page\n\nDurian\n\nfacts",
    ],
    [
      "HTML over 64 KB (read in the document worker)",
      async () => dataUrl("text/html", `<html><head><title>Page</title><script>${"x();".repeat(20_000)}</script></head><body><h1>Durian</h1><p>facts</p></body></html>`),
      "page.html",
      "Page\n\nDurian\n\nfacts",
    ],
    ["TXT (bare base64, type from the extension)", async () => Buffer.from("plain quince notes").toString("base64"), "notes.txt", "plain quince notes"],
  ])("%s", async (_kind, make, filename, expected) => {
    const asFile = await promptTokens([text("Summarise this."), filePart(await make(), filename)]);
    const asText = await promptTokens([text("Summarise this."), text(`<file name="${filename}">\n${expected}\n</file>`)]);
    const without = await promptTokens([text("Summarise this.")]);
    expect(asFile).toBe(asText);
    expect(asFile).toBeGreaterThan(without + 5);
  });

  it("PPTX (pptxgenjs): the slides' words reach the model", async () => {
    const slides = ["Roadmap for the mango release", "Ship it in spring"];
    const asFile = await promptTokens([
      text("Read:"),
      filePart(dataUrl("application/vnd.openxmlformats-officedocument.presentationml.presentation", await makePptx(slides)), "deck.pptx"),
    ]);
    const wrapperOnly = await promptTokens([text("Read:"), text('<file name="deck.pptx">\n\n</file>')]);
    const words = await promptTokens([text("Read:"), text(`<file name="deck.pptx">\n${slides.join("\n")}\n</file>`)]);
    expect(asFile).toBeGreaterThanOrEqual(words);
    expect(asFile).toBeGreaterThan(wrapperOnly + 8);
  });

  it("two files and text in one message, streamed: every part is read, in order", async () => {
    const content = [text("Compare"), filePart(dataUrl("text/plain", "first papaya"), "a.txt"), filePart(dataUrl("text/plain", "second guava"), "b.txt")];
    const stream = await server.openai().chat.completions.create({
      model: "tiny-chat",
      messages: [{ role: "user", content }],
      max_tokens: 1,
      stream: true,
      stream_options: { include_usage: true },
    });
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) usage = chunk.usage ?? usage;
    expect(usage!.prompt_tokens).toBe(
      await promptTokens([text("Compare"), text('<file name="a.txt">\nfirst papaya\n</file>'), text('<file name="b.txt">\nsecond guava\n</file>')]),
    );
  });
});

describe("input_audio parts: transcribed by the configured speech-to-text model", () => {
  it("the transcript, from the same engine /audio/transcriptions uses, is what the model reads", async () => {
    const transcript = await fetch(`${server.baseUrl}/audio/transcriptions`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.adminKey}` },
      body: (() => {
        const form = new FormData();
        form.append("model", "tiny-whisper");
        form.append("file", new Blob([new Uint8Array(wav)]), "tone.wav");
        return form;
      })(),
    }).then(async (res) => ((await res.json()) as { text: string }).text);
    expect(transcript.trim().length).toBeGreaterThan(0);
    const audio = { type: "input_audio", input_audio: { data: wav.toString("base64"), format: "wav" } } as ChatCompletionContentPart;
    const withAudio = await promptTokens([text("What was said?"), audio]);
    const asText = await promptTokens([text("What was said?"), text(`<audio transcript>\n${transcript.trim()}\n</audio>`)]);
    const emptyTranscript = await promptTokens([text("What was said?"), text("<audio transcript>\n\n</audio>")]);
    expect(withAudio).toBe(asText);
    expect(withAudio).toBeGreaterThan(emptyTranscript);
  });

  it("raw pcm16 (24 kHz mono) is read too", async () => {
    const pcm = floatToPcm16(new Float32Array(24_000).map((_, i) => 0.3 * Math.sin(i / 9)));
    const tokens = await promptTokens([text("Hear:"), { type: "input_audio", input_audio: { data: pcm.toString("base64"), format: "pcm16" } } as never]);
    expect(tokens).toBeGreaterThan(await promptTokens([text("Hear:"), text("<audio transcript>\n\n</audio>")]));
  });

  it("audioInput.transcriptionModel picks the speech-to-text model, and the audio is billed on it per second", async () => {
    const { key, accountId } = server.createKey({ usd: 1 });
    const client = server.openai(key);
    await promptTokens([text("Listen"), { type: "input_audio", input_audio: { data: wav.toString("base64"), format: "wav" } } as never], "tiny-chat-audio", client);
    const charges = listLedgerEntries(server.db, { accountId, kind: "charge" });
    const asr = charges.filter((c) => c.model === "whisper-priced");
    expect(asr).toHaveLength(1);
    expect(asr[0]!.sku).toBe("whisper-priced-asr-second");
    // Two seconds of audio at $0.0001 per second.
    expect(asr[0]!.deltaMicros).toBe(-200);
  });

  it("audio is decoded no further than a second past what the caller can pay to transcribe", async () => {
    const minute = await encodeAudio(new Float32Array(60 * 16000), 16000, "flac");
    const { key, accountId } = server.createKey({ usd: 0.0005 });
    const res = await post(
      server,
      "/chat/completions",
      {
        model: "tiny-chat-audio",
        max_tokens: 1,
        messages: [{ role: "user", content: [text("Listen"), { type: "input_audio", input_audio: { data: minute.toString("base64"), format: "flac" } }] }],
      },
      { key },
    );
    expect(res.status).toBe(402);
    // $0.0005 pays for 5 s of it: 6 s were decoded, not the minute ($0.006).
    expect(((await res.json()) as { error: string }).error).toMatch(/can cost up to \$0\.000600 /);
    expect(listLedgerEntries(server.db, { accountId, kind: "charge" })).toEqual([]);
  });

  it("a request the rate limit refuses is refused before its audio is transcribed, so it costs nothing", async () => {
    const { key, accountId } = server.createKey({ usd: 1 });
    updateApiKey(server.db, findActiveKey(server.db, key)!.id, { rateLimitOverrides: JSON.stringify({ "*": { rpm: 1 } }) });
    const body = {
      model: "tiny-chat-audio",
      max_tokens: 1,
      messages: [{ role: "user", content: [text("Listen"), { type: "input_audio", input_audio: { data: wav.toString("base64"), format: "wav" } }] }],
    };
    await server.withClockStopped(async () => {
      expect((await post(server, "/chat/completions", body, { key })).status).toBe(200);
      expect((await post(server, "/chat/completions", body, { key })).status).toBe(429);
    });
    const transcriptions = listLedgerEntries(server.db, { accountId, kind: "charge" }).filter((c) => c.model === "whisper-priced").length;
    expect(transcriptions).toBe(1);
  });
});

describe("GET /models", () => {
  it("text models report supportsAudioInput exactly when the node can transcribe", async () => {
    const capabilities = async (node: TestServer) => {
      const res = await fetch(`${node.baseUrl}/models/tiny-chat`);
      return ((await res.json()) as { model_spec: { capabilities: Record<string, unknown> } }).model_spec.capabilities;
    };
    expect((await capabilities(server)).supportsAudioInput).toBe(true);
    expect((await capabilities(deaf)).supportsAudioInput).toBe(false);
  });
});

describe("refusals name the offending field", () => {
  // Error-heavy: a key of its own, so the abuse guard's count does not touch other tests.
  let key: string;
  beforeAll(() => {
    key = server.createKey({ usd: 1 }).key;
  });

  it("an unknown file type: 400 on messages.0.content.1.file listing the supported types", async () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);
    const { status, body } = await refusal([text("x"), filePart(dataUrl("image/png", png), "cat.png")], { key });
    expect(status).toBe(400);
    expect(fieldErrors(body.details, 1, "file")).toEqual([
      "unsupported file type (image/png, cat.png; supported: PDF, DOCX, PPTX, XLSX, CSV, HTML, Markdown and plain text (TXT, JSON, YAML, XML, source code))",
    ]);
    expect(body.error).toMatch(/^messages\.0\.content\.1\.file: unsupported file type/);
    // What the official client shows: a BadRequestError whose message names the field.
    const error = await server
      .openai(key)
      .chat.completions.create({ model: "tiny-chat", messages: [{ role: "user", content: [filePart(dataUrl("image/png", png), "cat.png")] }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as Error).message).toMatch(/^400 "messages\.0\.content\.0\.file: unsupported file type \(image\/png, cat\.png; supported: PDF/);
  });

  it("a caller who cannot pay for one token is refused before its parts are read", async () => {
    const broke = server.createKey();
    const parts = [text("x"), filePart(dataUrl("application/pdf", "%PDF-1.7 broken"), "broken.pdf")];
    // The same request from a caller with credit is a 400 for the PDF: here it is never read.
    expect((await refusal(parts, { key, model: "tiny-chat-priced" })).status).toBe(400);
    const { status, body } = await refusal(parts, { key: broke.key, model: "tiny-chat-priced" });
    expect(status).toBe(402);
    expect(body.error).toMatch(/^Insufficient balance/);
    // A model without a price costs nothing, so nothing stops the read.
    expect((await refusal(parts, { key: broke.key })).status).toBe(400);
  });

  it("a corrupt PDF: 400 on the file with the library's reason", async () => {
    const { status, body } = await refusal([text("x"), filePart(dataUrl("application/pdf", "%PDF-1.7 broken"), "broken.pdf")], { key });
    expect(status).toBe(400);
    expect(fieldErrors(body.details, 1, "file")).toEqual(["could not read the PDF file: Invalid PDF structure."]);
  });

  it("bad base64, a URL, a file_id, a missing file_data: 400 on the field", async () => {
    const cases: [unknown, string[], RegExp][] = [
      [{ type: "file", file: { file_data: "data:application/pdf;base64,@@not base64@@", filename: "a.pdf" } }, ["file", "file_data"], /^not valid base64$/],
      [{ type: "file", file: { file_data: "https://example.com/a.pdf" } }, ["file", "file_data"], /does not fetch URLs/],
      [{ type: "file", file: { file_id: "file-abc" } }, ["file", "file_id"], /no Files API/],
      [{ type: "file", file: { filename: "a.txt" } }, ["file", "file_data"], /^required/],
      [{ type: "file", file: { file_data: "data:text/plain;base64,", filename: "a.txt" } }, ["file", "file_data"], /empty/],
      [{ type: "file" }, ["file"], /object/i],
    ];
    for (const [part, path, message] of cases) {
      const { status, body } = await refusal([text("x"), part], { key });
      expect(status, JSON.stringify(part)).toBe(400);
      expect(fieldErrors(body.details, 1, ...path)?.[0], JSON.stringify(part)).toMatch(message);
    }
  });

  it("limits: a file over --max-upload-mb is a 413, extracted text over the character limit a 400", async () => {
    const big = await refusal([text("x"), filePart(dataUrl("text/plain", "a".repeat(MAX_UPLOAD_MB * 1e6 + 10)), "big.txt")], { key });
    expect(big.status).toBe(413);
    expect(big.body).toMatchObject({ code: "PAYLOAD_TOO_LARGE" });
    expect(big.body.error).toMatch(/^messages\.0\.content\.1\.file\.file_data: the file is 0\.20 MB; this node accepts files up to 0\.20 MB/);
    const long = await refusal([text("x"), filePart(dataUrl("text/plain", "word ".repeat(MAX_FILE_CHARS)), "long.txt")], { key });
    expect(long.status).toBe(400);
    expect(fieldErrors(long.body.details, 1, "file")).toEqual([
      `the file's text is ${5 * MAX_FILE_CHARS - 1} characters long; this node reads at most ${MAX_FILE_CHARS} characters per file`,
    ]);
  });

  it("image_url and video_url: 400, the model cannot see (a GGUF model: node-llama-cpp has no multimodal input)", async () => {
    const image = await refusal([text("x"), { type: "image_url", image_url: { url: dataUrl("image/png", "x") } }], { key });
    expect(image.status).toBe(400);
    const [imageError] = fieldErrors(image.body.details, 1, "type") ?? [];
    expect(imageError).toMatch(/^the model "tiny-chat" does not support images \(image_url parts\): GGUF models run on node-llama-cpp 3\.22 here/);
    const video = await refusal([{ type: "video_url", video_url: { url: "https://example.com/v.mp4" } }], { key });
    expect(video.status).toBe(400);
    const [videoError] = fieldErrors(video.body.details, 0, "type") ?? [];
    expect(videoError).toMatch(/^the model "tiny-chat" does not support video input \(video_url parts\): GGUF models run on node-llama-cpp 3\.22 here/);
  });

  it("input_audio: bad base64, undecodable audio, an unknown format: 400 on the field", async () => {
    const audio = (input_audio: unknown) => [text("x"), { type: "input_audio", input_audio }];
    const badBase64 = await refusal(audio({ data: "!!!", format: "wav" }), { key });
    expect(badBase64.status).toBe(400);
    expect(fieldErrors(badBase64.body.details, 1, "input_audio", "data")).toEqual(["not valid base64"]);
    const garbage = await refusal(audio({ data: Buffer.from("this is not audio at all, just words").toString("base64"), format: "mp3" }), { key });
    expect(garbage.status).toBe(400);
    expect(fieldErrors(garbage.body.details, 1, "input_audio", "data")).toEqual(["could not decode the audio (declared format mp3)"]);
    const format = await refusal(audio({ data: wav.toString("base64"), format: "midi" }), { key });
    expect(format.status).toBe(400);
    expect(fieldErrors(format.body.details, 1, "input_audio", "format")?.[0]).toMatch(/wav/);
    const tooBig = await refusal(audio({ data: Buffer.alloc(MAX_UPLOAD_MB * 1e6 + 3).toString("base64") }), { key });
    expect(tooBig.status).toBe(413);
    expect(tooBig.body.error).toMatch(/^messages\.0\.content\.1\.input_audio\.data: the audio is 0\.2 MB/);
    // Two seconds for a model that takes one: decoded no further than a second past its limit.
    const tooLong = await refusal(audio({ data: wav.toString("base64"), format: "wav" }), { key, model: "tiny-chat-short-ears" });
    expect(tooLong.status).toBe(413);
    expect(tooLong.body.error).toBe("messages.0.content.1.input_audio.data: the audio is longer than 1 s; whisper-one-second accepts at most 1 s");
  });

  it("input_audio on a node with no speech-to-text model: 400 naming the part", async () => {
    const { status, body } = await refusal([text("x"), { type: "input_audio", input_audio: { data: wav.toString("base64"), format: "wav" } }], { server: deaf });
    expect(status).toBe(400);
    expect(fieldErrors(body.details, 1, "type")).toEqual([
      'the model "tiny-chat" does not support audio input (input_audio parts): no transcription model is configured on this node',
    ]);
  });
});
