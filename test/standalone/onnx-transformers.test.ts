import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AutoTokenizer, env, MusicgenForConditionalGeneration, pipeline, StyleTextToSpeech2Model, Tensor } from "@huggingface/transformers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeAllOnnxFixtures } from "../../src/fixtures/onnx/index.js";

/**
 * The fixtures through the real consumers: transformers.js pipelines loading them offline
 * by name from `env.localModelPath`, and kokoro-js' own calls (StyleTextToSpeech2Model +
 * AutoTokenizer, voice row picked by token count).
 */

let root: string;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "hearth-onnx-tjs-"));
  await writeAllOnnxFixtures(root);
  env.allowRemoteModels = false;
  env.localModelPath = root;
  env.useFSCache = false;
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

function rms(data: Float32Array): number {
  let sum = 0;
  for (const x of data) sum += x * x;
  return Math.sqrt(sum / data.length);
}

/** One second of a 440 Hz tone at 16 kHz. */
const tone = Float32Array.from({ length: 16000 }, (_, i) => 0.5 * Math.sin((2 * Math.PI * 440 * i) / 16000));

describe("transformers.js on the tiny ONNX fixtures", () => {
  it("feature-extraction returns hidden-size embeddings that differ between sentences", async () => {
    const extractor = await pipeline("feature-extraction", "tiny-embedding", { dtype: "fp32" });
    const pooled = await extractor(["The quick brown fox jumps over the lazy dog.", "Hello world, how is the weather today?"], {
      pooling: "mean",
      normalize: true,
    });
    expect(pooled.dims).toEqual([2, 32]);
    const [first, second] = pooled.tolist() as number[][];
    expect(first).not.toEqual(second);
    expect(Math.hypot(...first!)).toBeCloseTo(1, 5);

    const perToken = await extractor("Hello world");
    expect(perToken.dims).toEqual([1, 4, 32]);
    await extractor.dispose();
  });

  it("automatic-speech-recognition transcribes, with and without timestamps, and ends on its own", async () => {
    const transcriber = await pipeline("automatic-speech-recognition", "tiny-whisper", { dtype: "fp32" });
    const plain = (await transcriber(tone, { language: "english", task: "transcribe" })) as { text: string };
    expect(typeof plain.text).toBe("string");
    expect(plain.text.length).toBeGreaterThan(0);

    // One segment from <|0.00|> to <|1.00|>: the fixture's decoder closes it, then ends.
    const segments = (await transcriber(tone, { language: "english", return_timestamps: true })) as {
      text: string;
      chunks: Array<{ timestamp: [number, number | null]; text: string }>;
    };
    expect(segments.chunks).toHaveLength(1);
    expect(segments.chunks[0]!.timestamp).toEqual([0, 1]);

    const words = (await transcriber(tone, { language: "english", return_timestamps: "word" })) as {
      chunks: Array<{ timestamp: [number, number]; text: string }>;
    };
    expect(words.chunks.length).toBeGreaterThan(0);
    for (const chunk of words.chunks) expect(chunk.timestamp.every((t) => t >= 0 && t <= 30)).toBe(true);
    await transcriber.dispose();
  });

  it("text-to-audio with VITS returns 16 kHz audio whose length follows the text", async () => {
    const synthesizer = await pipeline("text-to-audio", "tiny-vits", { dtype: "fp32" });
    const short = (await synthesizer("Hello there")) as { audio: Float32Array; sampling_rate: number };
    const long = (await synthesizer("Hello there, this is a much longer sentence")) as { audio: Float32Array; sampling_rate: number };
    expect(short.sampling_rate).toBe(16000);
    expect(long.audio.length).toBeGreaterThan(short.audio.length);
    expect(rms(short.audio)).toBeGreaterThan(0.05);
    await synthesizer.dispose();
  });

  it("loads the Kokoro layout the way kokoro-js does and speaks phonemes at 24 kHz", async () => {
    const model = await StyleTextToSpeech2Model.from_pretrained("tiny-kokoro", { dtype: "fp32" });
    const tokenizer = await AutoTokenizer.from_pretrained("tiny-kokoro");
    const voice = new Float32Array(readFileSync(join(root, "tiny-kokoro/voices/af_heart.bin")).buffer.slice(0));
    const speak = async (phonemes: string, speed: number) => {
      const { input_ids } = tokenizer(phonemes, { truncation: true });
      const row = Math.min(Math.max(input_ids.dims.at(-1)! - 2, 0), 509);
      const { waveform } = await model({
        input_ids,
        style: new Tensor("float32", voice.slice(row * 256, (row + 1) * 256), [1, 256]),
        speed: new Tensor("float32", [speed], [1]),
      });
      return { ids: input_ids.tolist()[0] as bigint[], samples: waveform.data as Float32Array };
    };
    const hello = await speak("həlˈoʊ wˈɜːld", 1);
    expect(hello.ids[0]).toBe(0n);
    expect(hello.ids.at(-1)).toBe(0n);
    expect(hello.samples.length).toBe(hello.ids.length * 1200);
    expect(rms(hello.samples)).toBeGreaterThan(0.05);
    expect((await speak("həlˈoʊ wˈɜːld", 2)).samples.length).toBe((hello.ids.length * 1200) / 2);
    await model.dispose();
  });

  it("MusicgenForConditionalGeneration: frames + codebooks - 1 new tokens make frames x 640 samples at 32 kHz, with and without guidance; greedy is repeatable", async () => {
    const dir = join(root, "tiny-musicgen");
    const tokenizer = await AutoTokenizer.from_pretrained("tiny-musicgen");
    const model = await MusicgenForConditionalGeneration.from_pretrained("tiny-musicgen", { dtype: "fp32" });
    const config = JSON.parse(readFileSync(join(dir, "config.json"), "utf8"));
    expect(config.audio_encoder.sampling_rate).toBe(32000);
    const inputs = tokenizer("calm lo-fi piano beat", { truncation: true });
    const generate = async (options: Record<string, unknown>) =>
      (await (model as unknown as { generate(o: Record<string, unknown>): Promise<Tensor> }).generate({ ...inputs, ...options })) as Tensor;
    const frames = 25;
    // The export's own generation config: sampling with classifier-free guidance (a doubled batch).
    const sampled = await generate({ max_new_tokens: frames + config.decoder.num_codebooks - 1 });
    expect(sampled.dims).toEqual([1, 1, frames * 640]);
    expect(rms(sampled.data as Float32Array)).toBeGreaterThan(0.05);
    const greedy = () => generate({ max_new_tokens: frames + config.decoder.num_codebooks - 1, do_sample: false, guidance_scale: 1 });
    const first = await greedy();
    expect(first.dims).toEqual([1, 1, frames * 640]);
    expect((await greedy()).data).toEqual(first.data);
    await model.dispose();
  });
});
