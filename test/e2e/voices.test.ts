import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encodeAudio } from "../../src/media/ffmpeg.js";
import { floatToPcm16, wavHeader } from "../../src/media/pcm.js";
import { post, startTestServer, tinyKokoroEntry, tinyVitsEntry, type TestServer } from "../helpers/testServer.js";
import { findClonedVoice } from "../../src/store/clonedVoices.js";

let server: TestServer;
let owner: { key: string; accountId: string };
let stranger: { key: string; accountId: string };
/** Six seconds of Hearth's own speech, the reference sample. */
let sample: Buffer;

beforeAll(async () => {
  server = await startTestServer({
    models: [
      tinyKokoroEntry(),
      // A second cloning model, and one that accepts WAV samples only.
      tinyKokoroEntry({ id: "tts-kokoro-wav-only", voiceCloning: { encoder: tinyKokoroEntry().voiceCloning!.encoder, acceptedFormats: ["wav"] } }),
      tinyKokoroEntry({ id: "tts-kokoro-short-samples", voiceCloning: { encoder: tinyKokoroEntry().voiceCloning!.encoder, maxSampleSeconds: 2 } }),
      tinyVitsEntry(),
    ],
  });
  owner = server.createKey({ usd: 1 });
  stranger = server.createKey({ usd: 1 });
  const speech = await server.openai().audio.speech.create({
    model: "tts-kokoro",
    voice: "bm_george",
    input: "This is my voice. I am reading a sample for cloning, slowly.",
    response_format: "wav",
    speed: 0.6,
  } as never);
  sample = Buffer.from(await speech.arrayBuffer());
});
afterAll(() => server.stop());

async function uploadVoice(fields: Record<string, string>, file: { data: Buffer; name: string; type?: string } | null, key = owner.key) {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  if (file) form.append("file", new Blob([new Uint8Array(file.data)], { type: file.type ?? "audio/wav" }), file.name);
  return fetch(`${server.baseUrl}/audio/voices`, { method: "POST", headers: { authorization: `Bearer ${key}` }, body: form });
}

const speak = (key: string, voice: string, model = "tts-kokoro") =>
  post(server, "/audio/speech", { model, voice, input: "Hello from a cloned voice.", response_format: "pcm" }, { key });

describe("voice cloning", () => {
  let handle: string;

  it("mints a vv_ handle bound to the model, stored in SQLite with its 256-value embedding and on disk", async () => {
    const response = await uploadVoice({ model: "tts-kokoro", name: "George, slowly" }, { data: sample, name: "me.wav" });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { id: string; model: string };
    expect(Object.keys(body).sort()).toEqual(["id", "model"]);
    expect(body.id).toMatch(/^vv_[0-9a-f]{24}$/);
    expect(body.model).toBe("tts-kokoro");
    handle = body.id;

    const stored = findClonedVoice(server.db, owner.accountId, handle, Date.now())!;
    expect(stored).toMatchObject({ accountId: owner.accountId, modelId: "tts-kokoro", name: "George, slowly", sampleFormat: "wav" });
    expect(stored.embedding.byteLength).toBe(256 * 4);
    expect(stored.sampleSeconds).toBeGreaterThan(5);
    const voicesDir = join(server.dataDir, "voices");
    expect(readFileSync(join(voicesDir, `${handle}.wav`)).equals(sample)).toBe(true);
    // The vector as a Kokoro voice pack: 510 identical rows of 256 float32.
    expect(readFileSync(join(voicesDir, `${handle}.bin`)).length).toBe(510 * 256 * 4);
  });

  it("speaks with the cloned voice on its model: audio different from every preset voice", async () => {
    const cloned = await speak(owner.key, handle);
    expect(cloned.status).toBe(200);
    const audio = Buffer.from(await cloned.arrayBuffer());
    expect(audio.length).toBeGreaterThan(10_000);
    for (const preset of ["af_heart", "bm_george"]) {
      const other = Buffer.from(await (await speak(owner.key, preset)).arrayBuffer());
      expect(audio.equals(other), preset).toBe(false);
    }
    // The same sample always gives the same voice.
    expect(Buffer.from(await (await speak(owner.key, handle)).arrayBuffer()).equals(audio)).toBe(true);
  });

  it("streams with the cloned voice too", async () => {
    const response = await post(
      server,
      "/audio/speech",
      { model: "tts-kokoro", voice: handle, input: "One. Two. Three.", response_format: "mp3", streaming: true },
      { key: owner.key },
    );
    expect(response.status).toBe(200);
    expect((await response.arrayBuffer()).byteLength).toBeGreaterThan(1000);
  });

  it("answers 400 when the handle is used with another model", async () => {
    for (const model of ["tts-kokoro-wav-only", "tts-vits"]) {
      const response = await speak(owner.key, handle, model);
      expect(response.status, model).toBe(400);
      const body = (await response.json()) as { error: string; details: Record<string, unknown> };
      expect(body.error).toMatch(/cloned for tts-kokoro/);
      expect(body.details).toHaveProperty("voice");
    }
  });

  it("keeps handles private: another account gets 404 for speech, listing and deletion", async () => {
    expect((await speak(stranger.key, handle)).status).toBe(404);
    const list = (await (await fetch(`${server.baseUrl}/audio/voices`, { headers: { authorization: `Bearer ${stranger.key}` } })).json()) as { data: unknown[] };
    expect(list.data).toEqual([]);
    const del = await fetch(`${server.baseUrl}/audio/voices/${handle}`, { method: "DELETE", headers: { authorization: `Bearer ${stranger.key}` } });
    expect(del.status).toBe(404);
    expect((await speak(owner.key, handle)).status).toBe(200);
  });

  it("lists the owner's voices", async () => {
    const res = await fetch(`${server.baseUrl}/audio/voices`, { headers: { authorization: `Bearer ${owner.key}` } });
    // The cloning model's headers, the balance and the account window's limits, as on the other endpoints.
    expect(res.headers.get("x-service-model-id")).toBe("tts-kokoro");
    expect(res.headers.get("x-service-model-router")).toBe("kokoro");
    expect(res.headers.get("x-service-balance-usd")).toMatch(/^\d+(\.\d+)?$/);
    expect(res.headers.get("x-ratelimit-limit-requests")).toBe("300");
    const list = (await res.json()) as { object: string; data: any[] };
    expect(list.object).toBe("list");
    expect(list.data).toHaveLength(1);
    expect(list.data[0]).toMatchObject({ id: handle, object: "voice", model: "tts-kokoro", name: "George, slowly" });
    expect(list.data[0].expires_at).toBeGreaterThan(Date.now() / 1000 + 29 * 86400);
  });

  it("deletes a voice: its row and files go, and the handle stops working", async () => {
    const del = await fetch(`${server.baseUrl}/audio/voices/${handle}`, { method: "DELETE", headers: { authorization: `Bearer ${owner.key}` } });
    expect(del.status).toBe(200);
    expect(await del.json()).toEqual({ id: handle, object: "voice", deleted: true });
    // Expired or not (now = 0): the row is gone.
    expect(findClonedVoice(server.db, owner.accountId, handle, 0)).toBeUndefined();
    expect(existsSync(join(server.dataDir, "voices", `${handle}.wav`))).toBe(false);
    expect(existsSync(join(server.dataDir, "voices", `${handle}.bin`))).toBe(false);
    expect((await speak(owner.key, handle)).status).toBe(404);
  });

  it("accepts compressed samples (MP3) and uses the first cloning model when none is named", async () => {
    const tone = Float32Array.from({ length: 24000 * 3 }, (_, i) => 0.4 * Math.sin((2 * Math.PI * 180 * i) / 24000));
    const mp3 = await encodeAudio(tone, 24000, "mp3");
    const response = await uploadVoice({}, { data: mp3, name: "tone.mp3", type: "audio/mpeg" });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { model: string }).model).toBe("tts-kokoro");
  });
});

describe("voice upload errors", () => {
  it("400 for a model without voice cloning, a missing file, a too-short sample, a container the model does not accept", async () => {
    const noCloning = await uploadVoice({ model: "tts-vits" }, { data: sample, name: "me.wav" });
    expect(noCloning.status).toBe(400);
    expect(((await noCloning.json()) as { error: string }).error).toMatch(/does not support voice cloning/);
    expect((await uploadVoice({ model: "tts-kokoro" }, null)).status).toBe(400);
    const blip = floatToPcm16(new Float32Array(24000 / 2).fill(0.1));
    const short = await uploadVoice({ model: "tts-kokoro" }, { data: Buffer.concat([wavHeader(24000, blip.length), blip]), name: "short.wav" });
    expect(short.status).toBe(400);
    expect(((await short.json()) as { error: string }).error).toMatch(/at least 1 s/);
    const mp3 = await encodeAudio(new Float32Array(24000 * 2).fill(0.1), 24000, "mp3");
    const wrongContainer = await uploadVoice({ model: "tts-kokoro-wav-only" }, { data: mp3, name: "x.mp3", type: "audio/mpeg" });
    expect(wrongContainer.status).toBe(400);
    expect(((await wrongContainer.json()) as { error: string }).error).toMatch(/accepts wav samples, not mp3/);
    // Six seconds for a model that takes two: decoded no further than a second past its limit.
    const long = await uploadVoice({ model: "tts-kokoro-short-samples" }, { data: sample, name: "me.wav" });
    expect(long.status).toBe(400);
    expect(((await long.json()) as { error: string }).error).toBe("file: the sample is longer than 2 s; at most 2 s is accepted");
  });

  it("415 for a file that is not audio, 413 above the upload limit, 404 for an unknown model", async () => {
    expect((await uploadVoice({ model: "tts-kokoro" }, { data: Buffer.from("definitely not audio"), name: "x.wav" })).status).toBe(415);
    const small = await startTestServer({ models: [tinyKokoroEntry()], config: { maxUploadMb: 0.1 } });
    try {
      const form = new FormData();
      form.append("model", "tts-kokoro");
      form.append("file", new Blob([new Uint8Array(200_000)]), "big.wav");
      const response = await fetch(`${small.baseUrl}/audio/voices`, { method: "POST", headers: { authorization: `Bearer ${small.adminKey}` }, body: form });
      expect(response.status).toBe(413);
      expect(((await response.json()) as { code: string }).code).toBe("PAYLOAD_TOO_LARGE");
    } finally {
      await small.stop();
    }
    expect((await uploadVoice({ model: "tts-nope" }, { data: sample, name: "me.wav" })).status).toBe(404);
  });
});
