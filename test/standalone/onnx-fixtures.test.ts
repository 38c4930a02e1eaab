import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { CLIPTokenizer } from "@huggingface/transformers";
import * as ort from "onnxruntime-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { convertClipTokenizer } from "../../src/engines/tokenizers/convertClipTokenizer.js";
import { ONNX_FIXTURES, writeAllOnnxFixtures, writeStableDiffusionModel } from "../../src/fixtures/onnx/index.js";
import { decodeModelProto } from "../../src/engines/onnx/onnxProto.js";

/** Every file under `dir`, as paths relative to it. */
function listFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((p) => statSync(join(dir, p)).isFile())
    .sort();
}

const int64 = (values: number[], dims: number[]) => new ort.Tensor("int64", BigInt64Array.from(values, BigInt), dims);
const float32 = (values: Float32Array | number[], dims: number[]) => new ort.Tensor("float32", Float32Array.from(values), dims);
const zeros = (dims: number[]) => new ort.Tensor("float32", new Float32Array(dims.reduce((a, b) => a * b, 1)), dims);

function rms(data: Float32Array): number {
  let sum = 0;
  for (const x of data) sum += x * x;
  return Math.sqrt(sum / data.length);
}

let root: string;
let fixtures: string;
const writeMs: Record<string, number> = {};

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "hearth-onnx-"));
  fixtures = join(root, "fixtures");
  for (const [name, write] of Object.entries(ONNX_FIXTURES)) {
    const started = performance.now();
    await write(join(fixtures, name));
    writeMs[name] = performance.now() - started;
  }
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("ONNX fixture layouts", () => {
  it("writes each fixture in well under a second and a few MB", () => {
    for (const name of Object.keys(ONNX_FIXTURES)) {
      expect(writeMs[name], name).toBeLessThan(1000);
      const dir = join(fixtures, name);
      const bytes = listFiles(dir).reduce((sum, file) => sum + statSync(join(dir, file)).size, 0);
      expect(bytes, name).toBeLessThan(2 * 1024 * 1024);
    }
  });

  it("lays out the files of the real exports", () => {
    expect(listFiles(join(fixtures, "tiny-embedding"))).toEqual(["config.json", "onnx/model.onnx", "tokenizer.json", "tokenizer_config.json"]);
    expect(listFiles(join(fixtures, "tiny-whisper"))).toEqual([
      "config.json",
      "generation_config.json",
      "onnx/decoder_model_merged.onnx",
      "onnx/encoder_model.onnx",
      "preprocessor_config.json",
      "tokenizer.json",
      "tokenizer_config.json",
    ]);
    expect(listFiles(join(fixtures, "tiny-kokoro"))).toEqual([
      "config.json",
      "onnx/model.onnx",
      "tokenizer.json",
      "tokenizer_config.json",
      "voices/af_heart.bin",
      "voices/am_adam.bin",
    ]);
    expect(listFiles(join(fixtures, "tiny-vits"))).toEqual(["config.json", "onnx/model.onnx", "tokenizer.json", "tokenizer_config.json"]);
    expect(listFiles(join(fixtures, "tiny-vlm"))).toEqual([
      "config.json",
      "generation_config.json",
      "onnx/decoder_model_merged.onnx",
      "onnx/embed_tokens.onnx",
      "onnx/vision_encoder.onnx",
      "preprocessor_config.json",
      "processor_config.json",
      "tokenizer.json",
      "tokenizer_config.json",
    ]);
    expect(listFiles(join(fixtures, "tiny-speaker-encoder"))).toEqual(["config.json", "onnx/model.onnx", "preprocessor_config.json"]);
    expect(listFiles(join(fixtures, "tiny-musicgen"))).toEqual([
      "config.json",
      "generation_config.json",
      "onnx/decoder_model_merged.onnx",
      "onnx/encodec_decode.onnx",
      "onnx/text_encoder.onnx",
      "preprocessor_config.json",
      "tokenizer.json",
      "tokenizer_config.json",
    ]);
    expect(listFiles(join(fixtures, "tiny-sd"))).toEqual([
      "model_index.json",
      "scheduler/scheduler_config.json",
      "text_encoder/config.json",
      "text_encoder/model.onnx",
      "tokenizer/merges.txt",
      "tokenizer/special_tokens_map.json",
      "tokenizer/tokenizer_config.json",
      "tokenizer/vocab.json",
      "unet/config.json",
      "unet/model.onnx",
      "vae_decoder/config.json",
      "vae_decoder/model.onnx",
      "vae_encoder/config.json",
      "vae_encoder/model.onnx",
    ]);
    const json = (path: string) => JSON.parse(readFileSync(join(fixtures, path), "utf8"));
    expect(json("tiny-kokoro/config.json")).toEqual({ model_type: "style_text_to_speech_2" });
    expect(json("tiny-vits/config.json")).toMatchObject({ model_type: "vits", sampling_rate: 16000 });
    expect(json("tiny-sd/scheduler/scheduler_config.json")).toMatchObject({
      _class_name: "EulerDiscreteScheduler",
      num_train_timesteps: 1000,
      beta_schedule: "scaled_linear",
      prediction_type: "epsilon",
      timestep_spacing: "trailing",
    });
    const bert = json("tiny-embedding/config.json");
    expect(bert.model_type).toBe("bert");
    expect(json("tiny-embedding/tokenizer_config.json").model_max_length).toBeLessThanOrEqual(bert.max_position_embeddings);
  });

  it("is deterministic: a second run writes identical bytes", async () => {
    const again = join(root, "again");
    await writeAllOnnxFixtures(again);
    for (const name of Object.keys(ONNX_FIXTURES)) {
      for (const file of listFiles(join(fixtures, name))) {
        expect(readFileSync(join(again, name, file)).equals(readFileSync(join(fixtures, name, file))), `${name}/${file}`).toBe(true);
      }
    }
  });

  it("writes IR 8 / opset 17 models, the Whisper decoder branching on use_cache_branch with an If", () => {
    const onnxFiles = Object.keys(ONNX_FIXTURES).flatMap((name) =>
      listFiles(join(fixtures, name))
        .filter((f) => f.endsWith(".onnx"))
        .map((f) => join(fixtures, name, f)),
    );
    expect(onnxFiles).toHaveLength(22);
    for (const file of onnxFiles) {
      const model = decodeModelProto(readFileSync(file));
      expect(model.ir_version, relative(fixtures, file)).toBe(8);
      expect(model.opset_import).toEqual([{ domain: "", version: 17 }]);
    }
    const decoder = decodeModelProto(readFileSync(join(fixtures, "tiny-whisper/onnx/decoder_model_merged.onnx")));
    const ifNode = decoder.graph.node.find((n) => n.op_type === "If");
    expect(ifNode?.input).toEqual(["use_cache_branch"]);
    expect(ifNode?.attribute.map((a) => a.name).sort()).toEqual(["else_branch", "then_branch"]);
  });
});

describe("onnxruntime-node runs every fixture", () => {
  it("embedding: last_hidden_state [batch, sequence, hidden], depending on the tokens", async () => {
    const session = await ort.InferenceSession.create(join(fixtures, "tiny-embedding/onnx/model.onnx"));
    expect(session.inputNames).toEqual(["input_ids", "attention_mask", "token_type_ids"]);
    const ids = [2, 40, 41, 42, 3, 2, 50, 51, 52, 3];
    const result = await session.run({
      input_ids: int64(ids, [2, 5]),
      attention_mask: int64(Array(10).fill(1), [2, 5]),
      token_type_ids: int64(Array(10).fill(0), [2, 5]),
    });
    const hidden = result.last_hidden_state!;
    expect(hidden.dims).toEqual([2, 5, 32]);
    const data = hidden.data as Float32Array;
    expect(data.slice(32, 64)).not.toEqual(data.slice(5 * 32 + 32, 5 * 32 + 64));
  });

  it("whisper: encoder, then the merged decoder with an empty and a filled cache, agreeing with one full pass", async () => {
    const dir = join(fixtures, "tiny-whisper/onnx");
    const encoder = await ort.InferenceSession.create(join(dir, "encoder_model.onnx"));
    const decoder = await ort.InferenceSession.create(join(dir, "decoder_model_merged.onnx"));
    const features = float32(
      new Float32Array(80 * 3000).map((_, i) => Math.sin(i / 7)),
      [1, 80, 3000],
    );
    const { last_hidden_state: encoded } = await encoder.run({ input_features: features });
    expect(encoded!.dims).toEqual([1, 1500, 32]);

    // transformers.js sizes the first step's empty caches from this metadata: batch_size -> batch, other names -> 0.
    const cacheInputs = decoder.inputMetadata.filter((m) => m.name.startsWith("past_key_values."));
    const cacheKinds = ["decoder.key", "decoder.value", "encoder.key", "encoder.value"];
    expect(cacheInputs.map((m) => m.name)).toEqual([0, 1].flatMap((i) => cacheKinds.map((kind) => `past_key_values.${i}.${kind}`)));
    for (const meta of cacheInputs) {
      if (!meta.isTensor) throw new Error(`${meta.name} is not a tensor`);
      expect(meta.shape[0]).toBe("batch_size");
      expect(meta.shape[1]).toBe(2);
      expect(meta.shape[3]).toBe(16);
      expect(typeof meta.shape[2]).toBe("string");
    }

    const emptyCache = Object.fromEntries(cacheInputs.map((m) => [m.name, zeros([1, 2, 0, 16])]));
    const generation = JSON.parse(readFileSync(join(fixtures, "tiny-whisper/generation_config.json"), "utf8"));
    const prompt = [generation.decoder_start_token_id, generation.lang_to_id["<|en|>"], generation.task_to_id.transcribe, generation.no_timestamps_token_id];
    const step = (ids: number[], cache: Record<string, ort.Tensor>, useCache: boolean) =>
      decoder.run({
        input_ids: int64(ids, [1, ids.length]),
        encoder_hidden_states: encoded!,
        use_cache_branch: new ort.Tensor("bool", [useCache], [1]),
        ...cache,
      });
    const vocabSize = JSON.parse(readFileSync(join(fixtures, "tiny-whisper/config.json"), "utf8")).vocab_size;
    const first = await step(prompt.slice(0, 3), emptyCache, false);
    expect(first.logits!.dims).toEqual([1, 3, vocabSize]);
    expect(first["present.0.decoder.key"]!.dims).toEqual([1, 2, 3, 16]);
    expect(first["present.1.encoder.value"]!.dims).toEqual([1, 2, 1500, 16]);
    expect(first["cross_attentions.0"]!.dims).toEqual([1, 2, 3, 1500]);

    const cache = Object.fromEntries(cacheInputs.map((m) => [m.name, first[m.name.replace("past_key_values", "present")]!]));
    const second = await step(prompt.slice(3), cache, true);
    expect(second.logits!.dims).toEqual([1, 1, vocabSize]);
    expect(second["present.1.decoder.value"]!.dims).toEqual([1, 2, 4, 16]);

    const full = await step(prompt, emptyCache, false);
    const lastRow = (full.logits!.data as Float32Array).slice(3 * vocabSize);
    const incremental = second.logits!.data as Float32Array;
    for (let i = 0; i < vocabSize; i += 97) expect(incremental[i]).toBeCloseTo(lastRow[i]!, 3);
  });

  it("musicgen: text encoder, the merged decoder over batch x codebooks rows agreeing with one full pass, EnCodec at 640 samples a frame", async () => {
    const dir = join(fixtures, "tiny-musicgen/onnx");
    const config = JSON.parse(readFileSync(join(fixtures, "tiny-musicgen/config.json"), "utf8"));
    const { num_codebooks: codebooks, vocab_size: codebookSize, pad_token_id: pad } = config.decoder;
    const textEncoder = await ort.InferenceSession.create(join(dir, "text_encoder.onnx"));
    const decoder = await ort.InferenceSession.create(join(dir, "decoder_model_merged.onnx"));
    const ids = [10, 14, 5, 1];
    const mask = int64([1, 1, 1, 1], [1, 4]);
    const { last_hidden_state: encoded } = await textEncoder.run({ input_ids: int64(ids, [1, 4]), attention_mask: mask });
    expect(encoded!.dims).toEqual([1, 4, config.text_encoder.d_model]);

    // transformers.js feeds the first step's empty cache sized by input_ids' rows (batch x codebooks), not the batch.
    const cacheInputs = decoder.inputMetadata.filter((m) => m.name.startsWith("past_key_values."));
    expect(cacheInputs).toHaveLength(4 * config.decoder.num_hidden_layers);
    const emptyCache = Object.fromEntries(cacheInputs.map((m) => [m.name, zeros([codebooks, 2, 0, 16])]));
    // Codebook k delayed by k steps: pad where position <= k, as transformers.js prepares them.
    const tokens = (length: number) => Array.from({ length: codebooks * length }, (_, i) => (i % length <= Math.floor(i / length) ? pad : (i * 7) % codebookSize));
    /** Columns [from, to) of every codebook's row of `all` (rows of `length`). */
    const columns = (all: number[], length: number, from: number, to: number) => Array.from({ length: codebooks }, (_, k) => all.slice(k * length + from, k * length + to)).flat();
    const step = (input: number[], length: number, cache: Record<string, ort.Tensor>, useCache: boolean) =>
      decoder.run({
        input_ids: int64(input, [codebooks, length]),
        encoder_hidden_states: encoded!,
        encoder_attention_mask: mask,
        use_cache_branch: new ort.Tensor("bool", [useCache], [1]),
        ...cache,
      });
    const all = tokens(6);
    const first = await step(columns(all, 6, 0, 5), 5, emptyCache, false);
    expect(first.logits!.dims).toEqual([codebooks, 5, codebookSize]);
    expect(first["present.0.decoder.key"]!.dims).toEqual([1, 2, 5, 16]);
    const cache = Object.fromEntries(cacheInputs.map((m) => [m.name, first[m.name.replace("past_key_values", "present")]!]));
    const second = await step(columns(all, 6, 5, 6), 1, cache, true);
    expect(second.logits!.dims).toEqual([codebooks, 1, codebookSize]);
    expect(second["present.1.decoder.value"]!.dims).toEqual([1, 2, 6, 16]);
    const full = await step(all, 6, emptyCache, false);
    const fullLogits = full.logits!.data as Float32Array;
    const incremental = second.logits!.data as Float32Array;
    for (let k = 0; k < codebooks; k++)
      for (let v = 0; v < codebookSize; v += 5) expect(incremental[k * codebookSize + v]).toBeCloseTo(fullLogits[(k * 6 + 5) * codebookSize + v]!, 3);

    const encodec = await ort.InferenceSession.create(join(dir, "encodec_decode.onnx"));
    const frames = 7;
    const codes = int64(
      Array.from({ length: codebooks * frames }, (_, i) => (i * 13) % codebookSize),
      [1, 1, codebooks, frames],
    );
    const { audio_values: audio } = await encodec.run({ audio_codes: codes });
    expect(audio!.dims).toEqual([1, 1, frames * 640]);
    const samples = audio!.data as Float32Array;
    expect(samples.every((x) => x > -1 && x < 1)).toBe(true);
    expect(rms(samples)).toBeGreaterThan(0.05);
  });

  it("kokoro: waveform length grows with tokens and shrinks with speed, and is audible", async () => {
    const session = await ort.InferenceSession.create(join(fixtures, "tiny-kokoro/onnx/model.onnx"));
    const voice = new Float32Array(readFileSync(join(fixtures, "tiny-kokoro/voices/af_heart.bin")).buffer.slice(0));
    expect(voice.length).toBe(510 * 256);
    const speak = async (tokens: number, speed: number) => {
      const ids = [0, ...Array.from({ length: tokens - 2 }, (_, i) => 43 + (i % 20)), 0];
      const { waveform } = await session.run({
        input_ids: int64(ids, [1, tokens]),
        style: float32(voice.slice(0, 256), [1, 256]),
        speed: float32([speed], [1]),
      });
      return waveform!;
    };
    const base = await speak(10, 1);
    expect(base.dims).toEqual([12000]);
    expect(rms(base.data as Float32Array)).toBeGreaterThan(0.05);
    expect((await speak(20, 1)).dims).toEqual([24000]);
    expect((await speak(10, 2)).dims).toEqual([6000]);
  });

  it("speaker encoder: mel [1, 80, frames] -> style [1, 256], any length, different for different sounds", async () => {
    const session = await ort.InferenceSession.create(join(fixtures, "tiny-speaker-encoder/onnx/model.onnx"));
    expect(session.inputNames).toEqual(["mel"]);
    const encode = async (frames: number, f: (i: number) => number) =>
      (
        await session.run({
          mel: float32(
            Float32Array.from({ length: 80 * frames }, (_, i) => f(i)),
            [1, 80, frames],
          ),
        })
      ).style!;
    const low = await encode(50, (i) => Math.sin(i / 3));
    const high = await encode(200, (i) => Math.cos(i / 11) * 2);
    expect(low.dims).toEqual([1, 256]);
    expect(high.dims).toEqual([1, 256]);
    const a = low.data as Float32Array;
    expect(a.every((v) => Math.abs(v) < 0.4)).toBe(true);
    expect(a).not.toEqual(high.data);
  });

  it("vits: waveform [batch, samples], silent where the attention mask is 0", async () => {
    const session = await ort.InferenceSession.create(join(fixtures, "tiny-vits/onnx/model.onnx"));
    const { waveform } = await session.run({
      input_ids: int64([0, 20, 0, 21, 0, 22, 0, 0], [2, 4]),
      attention_mask: int64([1, 1, 1, 1, 1, 1, 0, 0], [2, 4]),
    });
    expect(waveform!.dims).toEqual([2, 1600]);
    const data = waveform!.data as Float32Array;
    expect(rms(data.slice(0, 1600))).toBeGreaterThan(0.05);
    expect(rms(data.slice(1600 + 800))).toBe(0);
  });

  it.each(["float32", "int64"] as const)("stable diffusion, %s timestep: CLIP tokens -> text encoder -> UNet -> VAE, dynamic sizes", async (timestepType) => {
    const dir = join(root, `sd-${timestepType}`);
    await writeStableDiffusionModel(dir, { timestepType });
    const { tokenizerJson, tokenizerConfig } = await convertClipTokenizer(join(dir, "tokenizer"));
    const tokenizer = new CLIPTokenizer(tokenizerJson, tokenizerConfig);
    const vocab = JSON.parse(readFileSync(join(dir, "tokenizer/vocab.json"), "utf8"));
    const encoded = tokenizer(["a photo of a cat", ""], { padding: "max_length", max_length: 77, truncation: true });
    const ids = Array.from(encoded.input_ids.data as BigInt64Array, Number);
    expect(ids).toHaveLength(2 * 77);
    expect(ids[0]).toBe(vocab["<|startoftext|>"]);
    const end = ids.indexOf(vocab["<|endoftext|>"]);
    expect(tokenizer.decode(ids.slice(1, end)).trim()).toBe("a photo of a cat");
    expect(ids[78]).toBe(vocab["<|endoftext|>"]);

    const textEncoder = await ort.InferenceSession.create(join(dir, "text_encoder/model.onnx"));
    const text = await textEncoder.run({ input_ids: new ort.Tensor("int32", Int32Array.from(ids), [2, 77]) });
    expect(text.last_hidden_state!.dims).toEqual([2, 77, 32]);
    expect(text.pooler_output!.dims).toEqual([2, 32]);

    const unet = await ort.InferenceSession.create(join(dir, "unet/model.onnx"));
    const timestep = unet.inputMetadata.find((m) => m.name === "timestep");
    expect(timestep?.isTensor && timestep.type).toBe(timestepType);
    const latents = float32(
      new Float32Array(2 * 4 * 8 * 12).map((_, i) => Math.cos(i)),
      [2, 4, 8, 12],
    );
    const denoise = (t: number) =>
      unet.run({
        sample: latents,
        timestep: timestepType === "float32" ? float32([t, t], [2]) : int64([t], [1]),
        encoder_hidden_states: text.last_hidden_state!,
      });
    const early = (await denoise(999)).out_sample!;
    const late = (await denoise(10)).out_sample!;
    expect(early.dims).toEqual([2, 4, 8, 12]);
    expect(early.data).not.toEqual(late.data);

    const vaeDecoder = await ort.InferenceSession.create(join(dir, "vae_decoder/model.onnx"));
    const { sample: image } = await vaeDecoder.run({ latent_sample: early });
    expect(image!.dims).toEqual([2, 3, 64, 96]);
    const pixels = image!.data as Float32Array;
    expect(pixels.every((p) => p > -1 && p < 1)).toBe(true);
    expect(rms(pixels)).toBeGreaterThan(0.05);

    const vaeEncoder = await ort.InferenceSession.create(join(dir, "vae_encoder/model.onnx"));
    const { latent_sample: roundTrip } = await vaeEncoder.run({ sample: image! });
    expect(roundTrip!.dims).toEqual([2, 4, 8, 12]);
  });

  it("stable diffusion inpainting: the UNet takes 9 channels (latents, mask, masked latents), and the mask and masked latents change its prediction", async () => {
    const dir = join(fixtures, "tiny-sd-inpaint");
    expect(JSON.parse(readFileSync(join(dir, "unet/config.json"), "utf8"))).toMatchObject({ in_channels: 9, out_channels: 4 });
    expect(JSON.parse(readFileSync(join(dir, "model_index.json"), "utf8"))._class_name).toBe("OnnxStableDiffusionInpaintPipeline");
    const unet = await ort.InferenceSession.create(join(dir, "unet/model.onnx"));
    const sample = unet.inputMetadata.find((m) => m.name === "sample");
    expect(sample?.isTensor && sample.shape).toEqual(["batch_size", 9, "height", "width"]);
    const text = float32(
      new Float32Array(77 * 32).map((_, i) => Math.sin(i)),
      [1, 77, 32],
    );
    const run = async (maskValue: number, maskedLatent: number) => {
      const input = new Float32Array(9 * 8 * 8).map((_, i) => (i < 4 * 64 ? Math.cos(i) : i < 5 * 64 ? maskValue : maskedLatent));
      const { out_sample } = await unet.run({ sample: float32(input, [1, 9, 8, 8]), timestep: float32([500], [1]), encoder_hidden_states: text });
      expect(out_sample!.dims).toEqual([1, 4, 8, 8]);
      return Array.from(out_sample!.data as Float32Array);
    };
    const base = await run(1, 0);
    expect(await run(0, 0)).not.toEqual(base);
    expect(await run(1, 0.5)).not.toEqual(base);
  });
});
