import { existsSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { ModelEntry } from "../../src/config/modelRegistry.js";
import { writeDemoFixture } from "../../src/fixtures/demoModels.js";
import { startBenchServer } from "./http.js";
import { BENCH_MODELS_DIR } from "./models.js";

/**
 * `npm run bench -- --vision`: time to first token of a streamed image question (one 512×512
 * picture, a PNG data URL) on the tiny vision demo model (hearth-tiny-vision, Idefics3 layout),
 * over HTTP against an in-process Hearth. Each request's TTFT covers the part's decoding (sharp),
 * the image processor (resize, tiling), the vision encoder, and the prefill of the prompt with its
 * image tokens. Requests run one at a time (the engine generates one at a time); each picture is
 * different, so nothing is cached.
 */
export interface VisionBenchOptions {
  requests: number;
  maxTokens: number;
  json?: string;
  log: (line: string) => void;
}

export interface VisionBenchResult {
  requests: number;
  promptTokens: number;
  ttftMs: { median: number; min: number; max: number; mean: number };
  load: { before: number; after: number; cores: number };
}

export async function runVisionBench(options: VisionBenchOptions): Promise<VisionBenchResult> {
  const dir = join(BENCH_MODELS_DIR, "tiny-vlm");
  if (!existsSync(dir)) await writeDemoFixture("tiny-vlm", dir);
  const entry = ModelEntry.parse({ id: "hearth-tiny-vision", type: "text", backend: "transformers", file: dir, onnx: { threads: 1 } });
  const server = await startBenchServer(entry, false);
  const { endpoint } = server;
  const headers: Record<string, string> = { "content-type": "application/json", accept: "text/event-stream", authorization: `Bearer ${endpoint.key}` };
  const ask = async (seed: number) => {
    const url = await picture(512, 512, seed);
    const body = JSON.stringify({
      model: entry.id,
      messages: [
        {
          role: "user",
          content: [
            { type: "image_url", image_url: { url } },
            { type: "text", text: "What is in this picture?" },
          ],
        },
      ],
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: options.maxTokens,
      temperature: 0,
    });
    const startedAt = performance.now();
    const response = await fetch(`${endpoint.baseUrl}/chat/completions`, { method: "POST", headers, body });
    if (!response.ok || !response.body) throw new Error(`HTTP ${response.status}: ${await response.text()}`);
    let firstToken: number | undefined;
    let promptTokens = 0;
    let buffered = "";
    const decoder = new TextDecoder();
    for await (const chunk of response.body) {
      buffered += decoder.decode(chunk as Uint8Array, { stream: true });
      let newline = buffered.indexOf("\n");
      while (newline >= 0) {
        const line = buffered.slice(0, newline).trim();
        buffered = buffered.slice(newline + 1);
        newline = buffered.indexOf("\n");
        if (!line.startsWith("data:") || line === "data: [DONE]") continue;
        const event = JSON.parse(line.slice(5)) as { choices?: { delta?: { content?: string } }[]; usage?: { prompt_tokens: number } };
        if (firstToken === undefined && event.choices?.[0]?.delta?.content) firstToken = performance.now();
        if (event.usage) promptTokens = event.usage.prompt_tokens;
      }
    }
    if (firstToken === undefined) throw new Error("the stream carried no content");
    return { ttftMs: firstToken - startedAt, promptTokens };
  };
  try {
    await ask(-1); // loads the model
    options.log(`model: ${dir} (tiny Idefics3/SmolVLM, loaded); server: ${endpoint.baseUrl}`);
    const before = loadavg()[0]!;
    const runs = [];
    for (let i = 0; i < options.requests; i++) runs.push(await ask(i));
    const after = loadavg()[0]!;
    const times = runs.map((r) => r.ttftMs).sort((a, b) => a - b);
    const result: VisionBenchResult = {
      requests: runs.length,
      promptTokens: runs[0]!.promptTokens,
      ttftMs: {
        median: times[Math.floor(times.length / 2)]!,
        min: times[0]!,
        max: times.at(-1)!,
        mean: times.reduce((a, b) => a + b, 0) / times.length,
      },
      load: { before, after, cores: cpus().length },
    };
    options.log(
      `one 512×512 picture, ${result.promptTokens} prompt tokens, ${result.requests} requests one at a time: ` +
        `TTFT median ${result.ttftMs.median.toFixed(1)} ms (min ${result.ttftMs.min.toFixed(1)}, max ${result.ttftMs.max.toFixed(1)})`,
    );
    options.log(`load average (1 min): ${before.toFixed(2)} before, ${after.toFixed(2)} after, on ${result.load.cores} cores`);
    return result;
  } finally {
    await server.dispose();
  }
}

/** A picture of colour bands, different for each seed, as a PNG data URL. */
async function picture(width: number, height: number, seed: number): Promise<string> {
  const rgb = Buffer.alloc(width * height * 3);
  for (let i = 0; i < width * height; i++) rgb.set([(i * 7 + seed * 41) % 256, Math.floor(i / width + seed * 13) % 256, (i % width) % 256], i * 3);
  const png = await sharp(rgb, { raw: { width, height, channels: 3 } })
    .png()
    .toBuffer();
  return `data:image/png;base64,${png.toString("base64")}`;
}
