import { spawnSync } from "node:child_process";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { ffmpegPath } from "../../src/media/ffmpeg.js";
import sharp from "sharp";
import { tinyBackgroundRemovalEntry, tinyEmbeddingEntry, tinyImageEntry, tinyMusicgenEntry, tinyUpscaleEntry, tinyVideoEntry } from "./mediaModels.js";
import { startTestServer, tinyChatEntry, tinyKokoroEntry, tinyWhisperEntry, type TestServer } from "./testServer.js";
import { evmWallet } from "./wallets.js";

/**
 * A node that can serve every operation of the provider's document it offers, on the demo
 * models: chat, embeddings, images, video, speech (with voice cloning), music and transcription, a
 * character with the provider's example slug (alan-watts), web search, scraping and video
 * fetching against a loopback peer that also plays an Ethereum JSON-RPC node, x402 top-ups
 * (settlement off) and wallet keys (admin keys allowed, as the provider's example asks for one).
 */

/**
 * The provider's operations this node does not serve yet: the media operations of a later issue
 * ("Media beyond text-to-image"). Nothing else may be listed here.
 */
export const PROVIDER_OPERATIONS_NOT_SERVED: ReadonlySet<string> = new Set([]);

export const PROVIDER_NODE_WALLET = { payTo: evmWallet().address, baseUsdc: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913" } as const;

const ARTICLE = `<!doctype html><html><head><title>Lighthouse keepers</title></head><body><article><h1>Lighthouse keepers</h1>
<p>${"Keepers trimmed the wicks and wound the clockwork every night of the year. ".repeat(5)}</p></article></body></html>`;

export interface ProviderNode {
  node: TestServer;
  /** The loopback peer: /article (a page), /talk.mp4 (a video), /picture.png, /search (SearxNG), /rpc (JSON-RPC). */
  peerBase: string;
  /** A spoken WAV sample (the tiny Kokoro reading), for transcription and voice cloning. */
  spokenWav: Buffer;
  /** A small PNG (a light disc on a dark ground), for upscaling and background removal. */
  picture: Buffer;
  stop(): Promise<void>;
}

async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ server: Server; base: string }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/** A two-second MP4 (blue frames, a sine tone) for /video/transcriptions to fetch. */
function makeVideo(): Buffer {
  const args = ["-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "color=c=blue:s=64x64:d=2", "-f", "lavfi", "-i", "sine=frequency=440:duration=2"];
  const made = spawnSync(ffmpegPath(), [...args, "-shortest", "-c:v", "libx264", "-c:a", "aac", "-movflags", "frag_keyframe+empty_moov", "-f", "mp4", "pipe:1"], {
    maxBuffer: 16 * 1024 * 1024,
  });
  if (made.status !== 0) throw new Error(made.stderr.toString());
  return made.stdout;
}

/** A 48x32 PNG: a light disc on a dark ground. */
function makePicture(): Promise<Buffer> {
  const width = 48;
  const height = 32;
  const rgb = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) rgb.fill((x - 24) ** 2 + (y - 16) ** 2 < 100 ? 230 : 20, (y * width + x) * 3, (y * width + x) * 3 + 3);
  return sharp(rgb, { raw: { width, height, channels: 3 } })
    .png()
    .toBuffer();
}

export async function startProviderNode(): Promise<ProviderNode> {
  const video = makeVideo();
  const picture = await makePicture();
  // One loopback peer plays the web (a page, a video), a SearxNG server and an Ethereum JSON-RPC node.
  const { server: peer, base: peerBase } = await listen((req, res) => {
    const url = new URL(req.url!, "http://peer");
    if (url.pathname === "/search")
      return res
        .writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ results: [{ title: "AI", url: "https://example.org/ai", content: "News about AI." }] }));
    if (url.pathname === "/article") return res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(ARTICLE);
    if (url.pathname === "/picture.png") return res.writeHead(200, { "content-type": "image/png" }).end(picture);
    if (url.pathname === "/talk.mp4") return res.writeHead(200, { "content-type": "video/mp4", "content-length": String(video.length) }).end(video);
    if (url.pathname === "/rpc") {
      let body = "";
      req.on("data", (chunk) => (body += chunk));
      req.on("end", () => {
        const calls = JSON.parse(body);
        const answer = (call: { id: unknown }) => ({ jsonrpc: "2.0", id: call.id, result: "0x1" });
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(Array.isArray(calls) ? calls.map(answer) : answer(calls)));
      });
      return;
    }
    res.writeHead(404).end();
  });
  const node = await startTestServer({
    models: [
      tinyChatEntry(),
      tinyEmbeddingEntry(),
      tinyImageEntry({ image: { defaultSteps: 1, defaultWidth: 64, defaultHeight: 64 } }),
      tinyVideoEntry({ video: { durations: ["1s"], resolutions: { "64p": 64 }, defaultResolution: "64p", fps: 2 } }),
      tinyKokoroEntry(),
      tinyWhisperEntry(),
      tinyUpscaleEntry(),
      tinyBackgroundRemovalEntry(),
      // The provider's quote example asks for 60 seconds.
      tinyMusicgenEntry({ music: { maxDurationSeconds: 60 } }),
    ],
    characters: [{ slug: "alan-watts", name: "Alan Watts", model: "tiny-chat", systemPrompt: "You are a philosopher.", tags: ["philosophy"] }],
    config: {
      searchUrl: peerBase,
      webScraping: "on",
      videoWorkers: 1,
      wallet: {
        x402: { settlement: "off", base: { payTo: PROVIDER_NODE_WALLET.payTo } },
        rpc: { networks: { "ethereum-mainnet": { url: `${peerBase}/rpc` } } },
        web3Keys: { allowAdminKeys: true },
      },
    } as never,
  });
  const speech = await node
    .openai()
    .audio.speech.create({ model: "tts-kokoro", voice: "bm_george", input: "This is my voice, reading a sample slowly.", response_format: "wav", speed: 0.6 } as never);
  const spokenWav = Buffer.from(await speech.arrayBuffer());
  return {
    node,
    peerBase,
    spokenWav,
    picture,
    stop: async () => {
      await node.stop();
      peer.close();
    },
  };
}
