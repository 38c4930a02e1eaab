import { readFile } from "node:fs/promises";
import { AutoTokenizer, type PreTrainedTokenizer } from "@huggingface/transformers";
import * as ort from "onnxruntime-node";
import type { ModelEntry } from "../../config/modelRegistry.js";
import type { PcmSpeechEngine, SynthesizeOptions } from "../types.js";
import { concatSamples } from "../../media/pcm.js";
import { onnxFile, openSession } from "../onnx/onnxSession.js";
import { everySession, loadWithSessionsOffThread, type SessionLike } from "../onnx/OffThreadSession.js";
import { resolveExecutionProviders, type ExecutionProviderChoice } from "../onnx/resolveExecutionProviders.js";
import { configureTransformers } from "../transformers/transformersEnv.js";
import { WorkQueue } from "../WorkQueue.js";
import { listKokoroVoices, voiceLanguage, voicePath } from "./kokoroVoices.js";
import { languageFromHint, loadPhonemizer, type Phonemizer } from "./phonemize.js";
import { SpeakerEncoder } from "./SpeakerEncoder.js";

export const KOKORO_SAMPLE_RATE = 24000;
export const KOKORO_STYLE_DIM = 256;
/** Input tokens per model call besides the two "$" pads (the model's context is 512). */
const MAX_PHONEME_TOKENS = 510;

/**
 * Kokoro (StyleTTS 2 decoder, 82M) on onnxruntime-node, the pipeline kokoro-js runs:
 * text -> phonemes (espeak-ng via the `phonemizer` package, or Hearth's English fallback) ->
 * character-level tokenizer (tokenizer.json) -> input_ids [1, T] with "$" at both ends ->
 * style row T-2 of the voice file (float32 [510, 1, 256]) -> onnx/model.onnx
 * (input_ids, style [1, 256], speed [1]) -> waveform at 24 kHz.
 */
export class KokoroEngine implements PcmSpeechEngine {
  readonly kind = "speech";
  readonly output = "pcm";
  readonly sampleRate = KOKORO_SAMPLE_RATE;
  readonly nativeSpeed = true;
  readonly router: string;
  private readonly voiceData = new Map<string, Promise<Float32Array>>();
  private readonly queue: WorkQueue;

  private constructor(
    private readonly modelDir: string,
    private readonly session: SessionLike,
    private readonly tokenizer: PreTrainedTokenizer,
    private readonly phonemizer: Phonemizer,
    private readonly voiceNames: readonly string[],
    modelId: string,
    maxWaiting: number,
    readonly executionProvider: ExecutionProviderChoice,
    readonly cloning?: SpeakerEncoder,
  ) {
    this.router = `kokoro (onnxruntime, ${phonemizer.name} phonemes)`;
    this.queue = new WorkQueue(modelId, maxWaiting);
  }

  static async load(entry: ModelEntry, gpu: "auto" | false): Promise<KokoroEngine> {
    configureTransformers();
    const dir = entry.file!;
    const available = listKokoroVoices(dir);
    const voices = entry.speech.voices ? entry.speech.voices.filter((v) => available.includes(v)) : available;
    if (voices.length === 0) throw new Error(`no voice files in ${dir}/voices (expected <voice>.bin, e.g. af_heart.bin)`);
    // The speaker encoder runs where the voice model runs.
    const placement = await resolveExecutionProviders(entry.onnx.executionProviders, { gpu });
    const [[session, encoder], tokenizer, phonemizer] = await Promise.all([
      // Both sessions on one worker thread: their inferences never hold the event loop.
      loadWithSessionsOffThread(everySession, () =>
        Promise.all([
          openSession(onnxFile(dir, entry.onnx.dtype), entry.onnx, placement.providers),
          entry.voiceCloning ? SpeakerEncoder.load(entry.voiceCloning.encoder, entry.onnx, placement.providers) : Promise.resolve(undefined),
        ]),
      ),
      AutoTokenizer.from_pretrained(dir),
      loadPhonemizer(entry.speech.phonemizer),
    ]);
    if (encoder && encoder.styleDim !== KOKORO_STYLE_DIM) throw new Error(`the speaker encoder writes ${encoder.styleDim} values; Kokoro takes ${KOKORO_STYLE_DIM}`);
    return new KokoroEngine(dir, session, tokenizer, phonemizer, voices, entry.id, entry.queue.maxWaiting, placement, encoder);
  }

  voices(): readonly string[] {
    return this.voiceNames;
  }

  get phonemizerName(): Phonemizer["name"] {
    return this.phonemizer.name;
  }

  /** The phonemes a text is spoken as with a voice (what the model reads). */
  phonemes(text: string, voice: SynthesizeOptions["voice"], language?: string): Promise<string> {
    const lang = languageFromHint(language) ?? (voice.kind === "preset" ? voiceLanguage(voice.name) : "a");
    return this.phonemizer.phonemize(text, lang);
  }

  async synthesize(options: SynthesizeOptions): Promise<Float32Array> {
    const phonemes = await this.phonemes(options.text, options.voice, options.language);
    const parts = splitPhonemes(phonemes, MAX_PHONEME_TOKENS);
    const audio: Float32Array[] = [];
    for (const part of parts) audio.push(await this.queue.run(() => this.run(part, options), options.signal));
    return concatSamples(audio);
  }

  private async run(phonemes: string, options: SynthesizeOptions): Promise<Float32Array> {
    const { input_ids } = this.tokenizer(phonemes, { truncation: true });
    const ids = input_ids.data as BigInt64Array;
    const tokens = ids.length;
    // Only the two "$" pads: nothing the model can say.
    if (tokens <= 2) return new Float32Array(0);
    const style = options.voice.kind === "cloned" ? options.voice.style : await this.styleRow(options.voice.name, tokens);
    const outputs = await this.session.run({
      input_ids: new ort.Tensor("int64", ids, [1, tokens]),
      style: new ort.Tensor("float32", style, [1, KOKORO_STYLE_DIM]),
      speed: new ort.Tensor("float32", Float32Array.of(options.speed), [1]),
    });
    const waveform = outputs.waveform ?? outputs[this.session.outputNames[0]!]!;
    // The output's own array (transferred from the session's thread, or made for this run by
    // onnxruntime-node), not a copy: a minute of audio is 1.4 million samples.
    return waveform.data as Float32Array;
  }

  /** Row min(max(T - 2, 0), 509) of the voice pack, as kokoro-js picks it. */
  private async styleRow(voice: string, tokens: number): Promise<Float32Array> {
    let data = this.voiceData.get(voice);
    if (!data) {
      data = readFile(voicePath(this.modelDir, voice)).then((b) => new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength)));
      this.voiceData.set(voice, data);
    }
    const pack = await data;
    const rows = pack.length / KOKORO_STYLE_DIM;
    const row = Math.min(Math.max(tokens - 2, 0), rows - 1);
    return pack.slice(row * KOKORO_STYLE_DIM, (row + 1) * KOKORO_STYLE_DIM);
  }

  stats(): { busy: number; waiting: number } {
    return this.queue.stats();
  }

  async dispose(): Promise<void> {
    await Promise.all([this.session.release(), this.cloning?.dispose()]);
  }
}

/** Splits a phoneme string at spaces into pieces of at most `max` symbols (hard cuts only inside over-long words). */
export function splitPhonemes(phonemes: string, max: number): string[] {
  if (phonemes.length <= max) return [phonemes];
  const parts: string[] = [];
  let current = "";
  for (const word of phonemes.split(" ")) {
    for (let piece = word; piece.length > 0; piece = piece.slice(max)) {
      const chunk = piece.slice(0, max);
      if (current && current.length + 1 + chunk.length > max) {
        parts.push(current);
        current = "";
      }
      current = current ? `${current} ${chunk}` : chunk;
    }
  }
  if (current) parts.push(current);
  return parts;
}
