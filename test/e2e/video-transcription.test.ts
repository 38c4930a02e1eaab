import { spawnSync } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ffmpegPath } from "../../src/media/ffmpeg.js";
import { getBalances } from "../../src/store/ledger.js";
import { listUsage } from "../../src/store/usage.js";
import { post, startTestServer, tinyWhisperEntry, type TestServer } from "../helpers/testServer.js";

/** POST /video/transcriptions: a real MP4 (H.264 + AAC, made by ffmpeg) served by a loopback peer, or uploaded. */

const ASR_PRICE = { per_audio_second: { usd: 0.001, diem: 0.001 } };
let video: Buffer;
let peer: Server;
let base: string;
let node: TestServer;
let noFetching: TestServer;

beforeAll(async () => {
  const made = spawnSync(
    ffmpegPath(),
    [
      "-hide_banner",
      "-loglevel",
      "error",
      "-f",
      "lavfi",
      "-i",
      "color=c=blue:s=64x64:d=2",
      "-f",
      "lavfi",
      "-i",
      "sine=frequency=440:duration=2",
      "-shortest",
      "-c:v",
      "libx264",
      "-c:a",
      "aac",
      "-movflags",
      "frag_keyframe+empty_moov",
      "-f",
      "mp4",
      "pipe:1",
    ],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  expect(made.status, made.stderr?.toString()).toBe(0);
  video = made.stdout;
  peer = createServer((req, res) => {
    if (req.url === "/talk.mp4") res.writeHead(200, { "content-type": "video/mp4", "content-length": String(video.length) }).end(video);
    else if (req.url === "/page.html") res.writeHead(200, { "content-type": "text/html" }).end("<html><body>a video page, not a video</body></html>");
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => peer.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(peer.address() as AddressInfo).port}`;
  node = await startTestServer({ models: [tinyWhisperEntry({ pricing: ASR_PRICE })], config: { webScraping: "on" } });
  noFetching = await startTestServer({ models: [tinyWhisperEntry({ pricing: ASR_PRICE })] });
});
afterAll(async () => {
  await Promise.all([node.stop(), noFetching.stop()]);
  peer.close();
});

describe("POST /video/transcriptions", () => {
  it("fetches the video at the URL, transcribes its audio track, and bills its seconds once", async () => {
    const { key, accountId } = node.createKey({ usd: 1 });
    const res = await post(node, "/video/transcriptions", { url: `${base}/talk.mp4` }, { key });
    expect(res.status, await res.clone().text()).toBe(200);
    const body = (await res.json()) as { transcript: string; lang?: string };
    expect(typeof body.transcript).toBe("string");
    expect(Object.keys(body).every((k) => k === "transcript" || k === "lang")).toBe(true);
    expect(res.headers.get("x-service-model-id")).toBe("tiny-whisper");
    const charged = 1_000_000 - getBalances(node.db, accountId).USD;
    // About two seconds at $0.001 a second.
    expect(charged).toBeGreaterThanOrEqual(1_900);
    expect(charged).toBeLessThanOrEqual(2_200);
    const [row] = listUsage(node.db, accountId);
    expect(row).toMatchObject({ endpoint: "/video/transcriptions", model: "tiny-whisper", status: 200 });
    expect(row!.audioSeconds).toBeCloseTo(2, 0);
  });

  it("answers text/plain with response_format text, and takes the file uploaded as multipart", async () => {
    const text = await post(node, "/video/transcriptions", { url: `${base}/talk.mp4`, response_format: "text" });
    expect(text.status).toBe(200);
    expect(text.headers.get("content-type")).toMatch(/^text\/plain/);
    const form = new FormData();
    form.set("file", new Blob([video], { type: "video/mp4" }), "talk.mp4");
    const uploaded = await fetch(`${node.baseUrl}/video/transcriptions`, { method: "POST", headers: { authorization: `Bearer ${node.adminKey}` }, body: form });
    expect(uploaded.status).toBe(200);
    expect(typeof ((await uploaded.json()) as { transcript: string }).transcript).toBe("string");
  });

  it("refuses bad input by name, says why a URL failed, and charges nothing for any of it", async () => {
    const { key, accountId } = node.createKey({ usd: 1 });
    for (const [body, field] of [
      [{}, "url"],
      [{ url: "not a url" }, "url"],
      [{ url: `${base}/talk.mp4`, response_format: "srt" }, "response_format"],
      [{ url: `${base}/talk.mp4`, unknown: 1 }, "unknown"],
    ] as const) {
      const res = await post(node, "/video/transcriptions", body, { key });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(await res.text()).toContain(field);
    }
    const missing = await post(node, "/video/transcriptions", { url: `${base}/gone.mp4` }, { key });
    expect(missing.status).toBe(422);
    expect(((await missing.json()) as { error: string }).error).toContain("HTTP 404");
    const page = await post(node, "/video/transcriptions", { url: `${base}/page.html` }, { key });
    expect(page.status).toBe(415);
    const off = await post(noFetching, "/video/transcriptions", { url: `${base}/talk.mp4` });
    expect(off.status).toBe(503);
    expect(((await off.json()) as { error: string }).error).toContain("--web-scraping on");
    expect(getBalances(node.db, accountId).USD).toBe(1_000_000);
  });
});
