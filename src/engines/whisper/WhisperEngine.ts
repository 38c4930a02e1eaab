import { deflateSync } from "node:zlib";
import { LogitsProcessor, LogitsProcessorList, pipeline, random, Tensor, type AutomaticSpeechRecognitionPipeline } from "@huggingface/transformers";
import type { TranscriptionSettings } from "../../config/backendSettings.js";
import type { ModelEntry } from "../../config/modelRegistry.js";
import { InvalidRequestError } from "../../errors.js";
import type { TranscribeOptions, TranscriptionEngine, TranscriptionResult, TranscriptionSegment } from "../types.js";
import { resolveExecutionProviders, type ExecutionProviderChoice } from "../onnx/resolveExecutionProviders.js";
import { transformersDeviceOptions } from "../transformers/transformersDeviceOptions.js";
import { engineSessionOptions } from "../onnx/onnxSession.js";
import { configureTransformers } from "../transformers/transformersEnv.js";
import { WorkQueue } from "../WorkQueue.js";
import { WHISPER_SAMPLE_RATE } from "./whisperSampleRate.js";

/** transformers.js' Whisper decoding throws this when a window yields no tokens (silence): that is empty text, not an error. */
export const isSilenceError = (error: unknown) => String((error as Error)?.message ?? "").includes("token_ids must be a non-empty array of integers");

/** Whisper's geometry: 10 ms mel frames, 30 s windows, two mel frames per encoder position, 20 ms timestamp steps. */
const HOP_SAMPLES = 160;
const WINDOW_FRAMES = 3000;
const FRAMES_PER_TIMESTAMP = 2;
const TIMESTAMP_SECONDS = 0.02;
/** Tokens one window may generate (openai/whisper's sample_len: half the decoder's context). */
const MAX_NEW_TOKENS = 224;
/** openai/whisper's max_initial_timestamp, 1 s, in timestamp steps (for a generation config that does not say). */
const MAX_INITIAL_TIMESTAMP_STEPS = 50;
/** Whisper's decoder context, for a model whose config does not say (every released size has 448). */
const DEFAULT_DECODER_POSITIONS = 448;

/** One window's decode, as the seek loop reads it. */
interface DecodedWindow {
  /** Generated tokens, timestamps included, end-of-text left out. */
  tokens: number[];
  textTokens: number[];
  /** Mean log probability of the tokens, end-of-text included (openai/whisper's avg_logprob). */
  avgLogprob: number;
  compressionRatio: number;
  noSpeechProb: number | null;
  temperature: number;
}

/** A window's log-mel features, and the encoder's output once a decode has computed it. */
interface WindowAudio {
  features: Tensor;
  encoded?: Tensor;
}

interface PipelineChunk {
  text: string;
  timestamp: [number, number | null];
}

/** The pieces of transformers.js' Whisper that the windowed decoder drives directly. */
interface WhisperModel {
  config: { max_target_positions?: number };
  generation_config: {
    alignment_heads?: unknown[];
    no_timestamps_token_id?: number;
    prev_sot_token_id?: number;
    max_initial_timestamp_index?: number;
    eos_token_id: number | number[];
    decoder_start_token_id: number;
    is_multilingual?: boolean;
    lang_to_id?: Record<string, number>;
  };
  forward(inputs: unknown): Promise<{ logits: Tensor }>;
  generate(options: Record<string, unknown>): Promise<Tensor>;
  /** <|startoftranscript|> [<|lang|> <|task|>] for a generation config: transformers.js' own reading of language names and codes. */
  _retrieve_init_tokens(generationConfig: Record<string, unknown>): number[];
}
interface WhisperTokenizer {
  encode(text: string, options: { add_special_tokens: boolean }): number[];
  decode(ids: number[], options?: { skip_special_tokens?: boolean }): string;
  convert_tokens_to_ids(tokens: string[]): (number | undefined)[];
}

/**
 * Records the log probability of each sampled token under the distribution it was sampled
 * from, after Whisper's rules (suppressed tokens, timestamp constraints) and before the
 * temperature, as openai/whisper sums them. It runs before the processors Whisper appends and
 * keeps a reference to the logits, which those processors change in place: the distribution is
 * read one step later, when the sampled token is known (SampleAtTemperature divides a copy).
 */
class TokenLogprobs extends LogitsProcessor {
  promptTokens = -1;
  readonly values: number[] = [];
  private pending: Tensor | undefined;

  override _call(inputIds: bigint[][], logits: Tensor): Tensor {
    const ids = inputIds[0]!;
    if (this.promptTokens < 0) this.promptTokens = ids.length;
    else this.record(Number(ids.at(-1)));
    this.pending = logits;
    return logits;
  }

  /** The last sampled token (end-of-text, usually), once generation has returned. */
  finish(lastToken: number | undefined): void {
    if (lastToken !== undefined) this.record(lastToken);
    this.pending = undefined;
  }

  private record(token: number): void {
    if (!this.pending) return;
    this.values.push(logSoftmaxAt(this.pending.data as Float32Array, token));
    this.pending = undefined;
  }
}

/**
 * openai/whisper's max_initial_timestamp (1 s): a window's first timestamp, the start of its
 * first segment, comes at most that far into the window. transformers.js reads the setting but
 * never applies it (its timestamp processor leaves the first step before that rule), so without
 * this a window could open with any time up to 30 s. It runs before transformers.js' processors,
 * which at that step rule out text: together they leave the timestamps from 0 to 1 s.
 */
class MaxInitialTimestamp extends LogitsProcessor {
  constructor(
    private readonly beginIndex: number,
    private readonly lastAllowed: number,
  ) {
    super();
  }

  override _call(inputIds: bigint[][], logits: Tensor): Tensor {
    if (inputIds[0]!.length === this.beginIndex) (logits.data as Float32Array).fill(-Infinity, this.lastAllowed + 1);
    return logits;
  }
}

/**
 * The sampling temperature, applied last, as openai/whisper samples: Whisper's timestamp rules
 * compare the model's own probabilities (transformers.js would divide the logits before every
 * processor, and at a low temperature the timestamps' summed probability seldom wins). It divides
 * a copy, so TokenLogprobs reads the distribution before the temperature.
 */
class SampleAtTemperature extends LogitsProcessor {
  constructor(private readonly temperature: number) {
    super();
  }

  override _call(_inputIds: bigint[][], logits: Tensor): Tensor {
    return new Tensor(
      "float32",
      Float32Array.from(logits.data as Float32Array, (value) => value / this.temperature),
      logits.dims,
    );
  }
}

/** A processor list that keeps its first processor last when transformers.js' Whisper appends its rules. */
class ProcessorsEndingWith extends LogitsProcessorList {
  constructor(last: LogitsProcessor) {
    super();
    this.processors.push(last);
  }

  override push(item: LogitsProcessor): void {
    this.processors.splice(this.processors.length - 1, 0, item);
  }
}

/**
 * Whisper-family models through transformers.js, offline, on 16 kHz mono audio decoded by
 * ffmpeg. Segments come from Whisper's own windowed decoding (openai/whisper's seek loop over
 * 30 s windows with timestamp tokens), which also reports each window's tokens, average log
 * probability, compression ratio and no-speech probability, detects the language when none is
 * given, and translates (task "translate"). Word timestamps come from the
 * `automatic-speech-recognition` pipeline's cross-attention alignment. The server runs it on a
 * worker thread (WhisperWorkerEngine).
 */
export class WhisperEngine implements TranscriptionEngine {
  readonly kind = "transcription";
  readonly sampleRate = WHISPER_SAMPLE_RATE;
  readonly router = "whisper (transformers.js automatic-speech-recognition)";
  readonly supportsWordTimestamps: boolean;
  readonly supportsTranslation: boolean;
  private readonly queue: WorkQueue;
  private readonly model: WhisperModel;
  private readonly tokenizer: WhisperTokenizer;
  /** Sees the raw logits of every decoder call (the no-speech probability and language detection read them). */
  private onLogits: ((logits: Tensor) => void) | undefined;
  /** Sees the encoder's output a decoder call was given (a window's fallback decodes reuse it). */
  private onEncoded: ((encoderOutputs: Tensor) => void) | undefined;
  private readonly noSpeechToken: number | undefined;
  /** <|startofprev|>, which opens the text a window is conditioned on (a request's prompt). */
  private readonly startOfPrevious: number | undefined;
  /** The decoder's context: conditioning, start-of-transcript tokens and generated tokens together. */
  private readonly decoderPositions: number;
  /** The first timestamp token, <|0.00|> (every token from it on is a timestamp). */
  private readonly timestampBegin: number;
  private readonly endOfText: number;

  private constructor(
    private readonly transcriber: AutomaticSpeechRecognitionPipeline,
    private readonly settings: TranscriptionSettings,
    modelId: string,
    maxWaiting: number,
    readonly executionProvider: ExecutionProviderChoice,
  ) {
    this.queue = new WorkQueue(modelId, maxWaiting);
    this.model = transcriber.model as unknown as WhisperModel;
    this.tokenizer = transcriber.tokenizer as unknown as WhisperTokenizer;
    const generation = this.model.generation_config;
    this.supportsWordTimestamps = settings.wordTimestamps && (generation.alignment_heads?.length ?? 0) > 0;
    this.supportsTranslation = generation.is_multilingual === true;
    const [noSpeech, noCaptions] = this.tokenizer.convert_tokens_to_ids(["<|nospeech|>", "<|nocaptions|>"]);
    this.noSpeechToken = noSpeech ?? noCaptions;
    this.startOfPrevious = generation.prev_sot_token_id ?? this.tokenizer.convert_tokens_to_ids(["<|startofprev|>"])[0];
    this.decoderPositions = this.model.config.max_target_positions ?? DEFAULT_DECODER_POSITIONS;
    this.timestampBegin = (generation.no_timestamps_token_id ?? Number.MAX_SAFE_INTEGER - 1) + 1;
    this.endOfText = Array.isArray(generation.eos_token_id) ? generation.eos_token_id[0]! : generation.eos_token_id;
    const forward = this.model.forward.bind(this.model);
    this.model.forward = async (inputs) => {
      const encoded = (inputs as { encoder_outputs?: Tensor }).encoder_outputs;
      if (encoded) this.onEncoded?.(encoded);
      const outputs = await forward(inputs);
      this.onLogits?.(outputs.logits);
      return outputs;
    };
  }

  static async load(entry: ModelEntry, gpu: "auto" | false): Promise<WhisperEngine> {
    configureTransformers();
    const placement = await resolveExecutionProviders(entry.onnx.executionProviders, { gpu });
    const transcriber = (await pipeline("automatic-speech-recognition", entry.file!, {
      dtype: entry.onnx.dtype,
      ...transformersDeviceOptions(placement.providers, engineSessionOptions(entry.onnx)),
    })) as AutomaticSpeechRecognitionPipeline;
    return new WhisperEngine(transcriber, entry.transcription, entry.id, entry.queue.maxWaiting, placement);
  }

  async transcribe(options: TranscribeOptions): Promise<TranscriptionResult> {
    const task = options.task ?? "transcribe";
    if (task === "translate" && !this.supportsTranslation) throw InvalidRequestError.forField(["model"], "this model is English-only and cannot translate");
    return this.queue.run(async () => {
      const audio = typeof options.audio === "function" ? await options.audio() : options.audio;
      return this.transcribeSamples(audio, task, options);
    }, options.signal);
  }

  private async transcribeSamples(audio: Float32Array, task: "transcribe" | "translate", options: TranscribeOptions): Promise<TranscriptionResult> {
    const duration = audio.length / this.sampleRate;
    if (audio.length === 0) return { text: "", segments: [], words: options.timestamps.includes("word") ? [] : undefined, language: options.language, outputTokens: 0 };
    const wantWords = options.timestamps.includes("word") && this.supportsWordTimestamps;
    const wantSegments = options.timestamps.includes("segment");
    // An English-only model hears English whatever the hint says.
    const language = !this.supportsTranslation ? "en" : (options.language ?? (await this.detectLanguage(audio)));
    // English-only models take neither a task nor a language (transformers.js refuses both).
    const prefix = this.supportsTranslation ? { task, ...(language ? { language } : {}) } : {};
    const requested = options.temperature ?? 0;
    // The word alignment pass samples at a request's temperature through the pipeline.
    const base = { ...prefix, ...(requested > 0 ? { do_sample: true, temperature: requested } : {}) };
    const toWords = (chunks: PipelineChunk[] | undefined) =>
      (chunks ?? []).map((c) => ({ word: c.text.trim(), start: c.timestamp[0], end: c.timestamp[1] ?? duration })).filter((w) => w.word);
    const alignWords = async () => {
      const long = duration > this.settings.chunkLengthSeconds;
      const chunking = long
        ? { chunk_length_s: this.settings.chunkLengthSeconds, stride_length_s: Math.min(this.settings.strideLengthSeconds, this.settings.chunkLengthSeconds / 3) }
        : {};
      return this.run(audio, { ...base, ...chunking, return_timestamps: "word" });
    };
    const prompt = this.promptTokens(options.prompt);
    // Word timestamps alone: one pass with token-level alignment gives the text too (unprompted:
    // transformers.js' pipeline would return a prompt's tokens as text, so a prompt takes the windowed decoder).
    if (wantWords && !wantSegments && prompt.length === 0) {
      const aligned = await alignWords();
      const text = aligned.text.trim();
      options.onSegment?.({ start: 0, end: duration, text });
      return { text, segments: text ? [{ start: 0, end: duration, text }] : [], words: toWords(aligned.chunks), language };
    }
    // The standard's temperature 0 is openai/whisper's fallback: greedy first, then sampled at each fallback temperature.
    const temperatures = requested > 0 ? [requested] : [0, ...this.settings.fallbackTemperatures];
    const decoded = await this.decodeWindows(audio, prefix, temperatures, prompt, options);
    // Both granularities: a second pass aligns the words.
    const words = wantWords ? (decoded.text ? toWords((await alignWords()).chunks) : []) : undefined;
    return { ...decoded, words, language };
  }

  /**
   * A request's prompt as Whisper conditions on it (openai/whisper's initial_prompt: the text with
   * a leading space, without special tokens), kept to its last tokens that fit half the decoder's
   * context with <|startofprev|>. Empty for no prompt, or for a model without <|startofprev|>.
   * A prompt is text: special and timestamp tokens it spells out (which the tokenizer would read
   * as those tokens, a second <|startoftranscript|> say) are left out.
   */
  private promptTokens(prompt: string | undefined): number[] {
    const text = prompt?.trim();
    if (!text || this.startOfPrevious === undefined) return [];
    const limit = Math.floor(this.decoderPositions / 2) - 1;
    return this.tokenizer
      .encode(` ${text}`, { add_special_tokens: false })
      .filter((token) => token < this.endOfText)
      .slice(-limit);
  }

  /**
   * openai/whisper's transcription loop: decode a 30 s window with timestamp tokens, cut it into
   * segments at consecutive timestamp pairs, and move on to the end of the last complete segment
   * (or past the window when it ended with a lone timestamp). The prompt conditions the first
   * window only, as openai/whisper does without condition_on_previous_text and as transformers'
   * default ("first-segment") does. A window the model finds silent (decodeWithFallback) adds
   * nothing and the loop moves past it, as openai/whisper's no_speech_threshold does.
   */
  private async decodeWindows(
    audio: Float32Array,
    prefix: Record<string, unknown>,
    temperatures: number[],
    prompt: number[],
    options: TranscribeOptions,
  ): Promise<Omit<TranscriptionResult, "words" | "language">> {
    const timestampBegin = this.timestampBegin;
    const totalFrames = Math.ceil(audio.length / HOP_SAMPLES);
    const duration = audio.length / this.sampleRate;
    const segments: TranscriptionSegment[] = [];
    let outputTokens = 0;
    let seek = 0;
    while (seek < totalFrames) {
      options.signal?.throwIfAborted();
      const windowFrames = Math.min(WINDOW_FRAMES, totalFrames - seek);
      const offset = (seek * HOP_SAMPLES) / this.sampleRate;
      const samples = audio.subarray(seek * HOP_SAMPLES, (seek + WINDOW_FRAMES) * HOP_SAMPLES);
      const window = await this.decodeWithFallback(samples, prefix, temperatures, seek === 0 ? prompt : [], seek);
      if (this.isSilence(window)) {
        seek += windowFrames;
        continue;
      }
      const { tokens, textTokens } = window;
      const isTimestamp = tokens.map((t) => t >= timestampBegin);
      outputTokens += textTokens.length;
      const stats = { avgLogprob: window.avgLogprob, compressionRatio: window.compressionRatio, noSpeechProb: window.noSpeechProb, temperature: window.temperature, seek };
      const time = (token: number) => offset + (token - timestampBegin) * TIMESTAMP_SECONDS;
      const add = (sliced: number[], start: number, end: number) => {
        const text = this.text(sliced.filter((t) => t < timestampBegin)).trim();
        if (!text) return;
        const segment = { start, end: Math.min(Math.max(end, start), duration), text, tokens: sliced, ...stats };
        segments.push(segment);
        options.onSegment?.(segment);
      };
      const boundaries = isTimestamp.flatMap((ts, i) => (i > 0 && ts && isTimestamp[i - 1] ? [i] : []));
      const singleTimestampEnding = tokens.length >= 2 && isTimestamp.at(-1) === true && isTimestamp.at(-2) === false;
      let advance = windowFrames;
      if (boundaries.length > 0) {
        const slices = singleTimestampEnding ? [...boundaries, tokens.length] : boundaries;
        let last = 0;
        for (const current of slices) {
          const sliced = tokens.slice(last, current);
          add(sliced, time(sliced[0]!), time(sliced.at(-1)!));
          last = current;
        }
        if (!singleTimestampEnding) advance = (tokens[last - 1]! - timestampBegin) * FRAMES_PER_TIMESTAMP;
      } else {
        const stamps = tokens.filter((_, i) => isTimestamp[i]);
        const lastStamp = stamps.at(-1);
        const end = lastStamp !== undefined && lastStamp !== timestampBegin ? time(lastStamp) : offset + windowFrames / 100;
        add(tokens, offset, end);
      }
      // A window always moves the loop on (a model that stamps 0.00 at the end would not).
      seek += advance > 0 ? Math.min(advance, windowFrames) : windowFrames;
    }
    return { text: segments.map((s) => s.text).join(" "), segments, outputTokens };
  }

  /**
   * openai/whisper's decode_with_fallback: a window decoded at each temperature in turn until its
   * text passes (not repetitive past compressionRatioThreshold, not improbable below
   * logprobThreshold) or the model finds it silent; the last decode is kept. Sampling after a
   * greedy decode is seeded by the window's place and the attempt, so a file transcribes the same
   * every time at temperature 0, fallback and all.
   */
  private async decodeWithFallback(samples: Float32Array, prefix: Record<string, unknown>, temperatures: number[], prompt: number[], seek: number): Promise<DecodedWindow> {
    const endOfText = this.endOfText;
    const { input_features } = (await (this.transcriber.processor as unknown as (a: Float32Array) => Promise<{ input_features: Tensor }>)(samples)) as { input_features: Tensor };
    // The audio is encoded once: each fallback decode runs the decoder alone, as openai/whisper's does.
    const audio: WindowAudio = { features: input_features };
    let decoded: DecodedWindow | undefined;
    for (const [attempt, temperature] of temperatures.entries()) {
      // transformers.js samples with its global generator; a Whisper engine has its worker thread to itself.
      if (temperature > 0 && temperatures[0] === 0) random.seed(seek * 16 + attempt);
      const window = await this.decodeWindow(audio, prefix, temperature, prompt);
      const tokens = window.tokens.at(-1) === endOfText ? window.tokens.slice(0, -1) : window.tokens;
      const textTokens = tokens.filter((t) => t < this.timestampBegin);
      decoded = {
        tokens,
        textTokens,
        avgLogprob: window.logprobs.reduce((a, b) => a + b, 0) / (tokens.length + 1),
        compressionRatio: compressionRatio(this.text(textTokens)),
        noSpeechProb: window.noSpeechProb,
        temperature,
      };
      const failed = decoded.compressionRatio > this.settings.compressionRatioThreshold || decoded.avgLogprob < this.settings.logprobThreshold;
      if (!failed || this.isSilence(decoded)) break;
    }
    return decoded!;
  }

  /** openai/whisper's silence: the no-speech token likely at the start of the transcript, and the text improbable. */
  private isSilence(window: DecodedWindow): boolean {
    return window.noSpeechProb !== null && window.noSpeechProb > this.settings.noSpeechThreshold && window.avgLogprob < this.settings.logprobThreshold;
  }

  /** Text tokens as text; none (a window of timestamps alone, such as <|0.00|><|endoftext|>) is empty text, where transformers.js would throw. */
  private text(tokens: number[]): string {
    return tokens.length === 0 ? "" : this.tokenizer.decode(tokens, { skip_special_tokens: true });
  }

  /**
   * One 30 s window (zero-padded), after `prompt` (<|startofprev|> and the prompt's tokens) when one
   * is given, greedy at temperature 0 and sampled above: its generated tokens, their log
   * probabilities and the no-speech probability.
   */
  private async decodeWindow(
    audio: WindowAudio,
    prefix: Record<string, unknown>,
    temperature: number,
    prompt: number[],
  ): Promise<{ tokens: number[]; logprobs: number[]; noSpeechProb: number | null }> {
    const recorder = new TokenLogprobs();
    const processors = temperature > 0 && temperature !== 1 ? new ProcessorsEndingWith(new SampleAtTemperature(temperature)) : new LogitsProcessorList();
    processors.push(recorder);
    let noSpeechProb: number | null = null;
    let first = true;
    const conditioning = prompt.length > 0 ? [this.startOfPrevious!, ...prompt] : [];
    this.onLogits = (logits) => {
      if (!first) return;
      first = false;
      // At the start-of-transcript position (the first row after the conditioning), as openai/whisper reads it.
      if (this.noSpeechToken !== undefined) noSpeechProb = Math.exp(logSoftmaxAt(row(logits, conditioning.length), this.noSpeechToken));
    };
    this.onEncoded = (encoded) => {
      audio.encoded ??= encoded;
    };
    let sequence: number[];
    try {
      const decoderInput = [...conditioning, ...this.model._retrieve_init_tokens({ ...this.model.generation_config, ...prefix, return_timestamps: true })];
      processors.push(
        new MaxInitialTimestamp(decoderInput.length, this.timestampBegin + (this.model.generation_config.max_initial_timestamp_index ?? MAX_INITIAL_TIMESTAMP_STEPS)),
      );
      // A long prompt leaves fewer positions to generate in (openai/whisper stops at the context too).
      const maxNewTokens = Math.min(MAX_NEW_TOKENS, this.decoderPositions - decoderInput.length);
      const output = await this.model.generate({
        inputs: audio.features,
        ...(audio.encoded ? { encoder_outputs: audio.encoded } : {}),
        ...prefix,
        // Sampled from the whole distribution (transformers.js would keep its default top 50), at SampleAtTemperature's temperature.
        ...(temperature > 0 ? { do_sample: true, temperature: 1, top_k: 0 } : {}),
        return_timestamps: true,
        decoder_input_ids: decoderInput,
        max_new_tokens: maxNewTokens,
        logits_processor: processors,
      });
      sequence = (output.tolist() as bigint[][])[0]!.map(Number);
    } catch (error) {
      if (isSilenceError(error)) return { tokens: [], logprobs: [], noSpeechProb };
      throw translateError(error);
    } finally {
      this.onLogits = undefined;
      this.onEncoded = undefined;
    }
    recorder.finish(sequence.at(-1));
    return { tokens: sequence.slice(Math.max(recorder.promptTokens, 0)), logprobs: recorder.values, noSpeechProb };
  }

  /** openai/whisper's detect_language: the most likely language token after <|startoftranscript|>, from the first window. */
  private async detectLanguage(audio: Float32Array): Promise<string | undefined> {
    const generation = this.model.generation_config;
    if (!generation.is_multilingual || !generation.lang_to_id) return undefined;
    const { input_features } = (await (this.transcriber.processor as unknown as (a: Float32Array) => Promise<{ input_features: Tensor }>)(
      audio.subarray(0, WINDOW_FRAMES * HOP_SAMPLES),
    )) as { input_features: Tensor };
    let scores: Float32Array | undefined;
    this.onLogits = (logits) => (scores ??= row(logits, logits.dims[1]! - 1));
    try {
      await this.model.generate({ inputs: input_features, decoder_input_ids: [generation.decoder_start_token_id], return_timestamps: false, max_new_tokens: 1 });
    } finally {
      this.onLogits = undefined;
    }
    let best: string | undefined;
    let bestScore = -Infinity;
    for (const [token, id] of Object.entries(generation.lang_to_id)) {
      if (scores![id]! > bestScore) [best, bestScore] = [token.slice(2, -2), scores![id]!];
    }
    return best;
  }

  private async run(audio: Float32Array, kwargs: Record<string, unknown>): Promise<{ text: string; chunks?: PipelineChunk[] }> {
    try {
      return (await this.transcriber(audio, kwargs)) as { text: string; chunks?: PipelineChunk[] };
    } catch (error) {
      if (isSilenceError(error)) return { text: "", chunks: [] };
      throw translateError(error);
    }
  }

  async dispose(): Promise<void> {
    await this.transcriber.dispose();
  }
}

function translateError(error: unknown): unknown {
  const message = (error as Error).message ?? "";
  return /Language .* is not supported/.test(message) ? InvalidRequestError.forField(["language"], message) : error;
}

/** Row `position` of logits [1, positions, vocabulary]. */
function row(logits: Tensor, position: number): Float32Array {
  const vocabulary = logits.dims.at(-1)!;
  const data = (logits.type === "float32" ? logits : logits.to("float32")).data as Float32Array;
  return data.subarray(position * vocabulary, (position + 1) * vocabulary);
}

function logSoftmaxAt(logits: Float32Array, index: number): number {
  let max = -Infinity;
  for (const value of logits) if (value > max) max = value;
  let sum = 0;
  for (const value of logits) sum += Math.exp(value - max);
  return logits[index]! - max - Math.log(sum);
}

/** openai/whisper's compression ratio: UTF-8 bytes over zlib-compressed bytes. */
export function compressionRatio(text: string): number {
  const bytes = Buffer.from(text, "utf8");
  return bytes.length === 0 ? 0 : bytes.length / deflateSync(bytes).length;
}
