import { pipeline, type AutomaticSpeechRecognitionPipeline } from "@huggingface/transformers";
import type { ModelEntry, TranscriptionSettings } from "../../config.js";
import { InvalidRequestError } from "../../errors.js";
import type { TranscribeOptions, TranscriptionEngine, TranscriptionResult } from "../types.js";
import { configureTransformers } from "../transformers/transformersEnv.js";
import { WorkQueue } from "../WorkQueue.js";

export const WHISPER_SAMPLE_RATE = 16000;

/** transformers.js' Whisper decoding throws this when a window yields no tokens (silence): that is empty text, not an error. */
export const isSilenceError = (error: unknown) => String((error as Error)?.message ?? "").includes("token_ids must be a non-empty array of integers");

interface PipelineChunk {
  text: string;
  timestamp: [number, number | null];
}

/**
 * Whisper-family models through transformers.js' `automatic-speech-recognition` pipeline,
 * offline, on 16 kHz mono audio decoded by ffmpeg. Audio longer than one window is transcribed
 * in overlapping chunks (chunk_length_s / stride_length_s). Word timestamps come from the
 * cross-attention alignment heads; segment timestamps from Whisper's timestamp tokens.
 */
export class WhisperEngine implements TranscriptionEngine {
  readonly kind = "transcription";
  readonly sampleRate = WHISPER_SAMPLE_RATE;
  readonly router = "whisper (transformers.js automatic-speech-recognition)";
  readonly supportsWordTimestamps: boolean;
  private readonly queue: WorkQueue;

  private constructor(
    private readonly transcriber: AutomaticSpeechRecognitionPipeline,
    private readonly settings: TranscriptionSettings,
    modelId: string,
    maxWaiting: number,
  ) {
    this.queue = new WorkQueue(modelId, maxWaiting);
    const generation = (transcriber.model as unknown as { generation_config?: { alignment_heads?: unknown[] } }).generation_config;
    this.supportsWordTimestamps = settings.wordTimestamps && (generation?.alignment_heads?.length ?? 0) > 0;
  }

  static async load(entry: ModelEntry): Promise<WhisperEngine> {
    configureTransformers();
    const transcriber = (await pipeline("automatic-speech-recognition", entry.file!, {
      dtype: entry.onnx.dtype,
      device: "cpu",
      session_options: entry.onnx.threads > 0 ? { intraOpNumThreads: entry.onnx.threads } : {},
    })) as AutomaticSpeechRecognitionPipeline;
    return new WhisperEngine(transcriber, entry.transcription, entry.id, entry.queue.maxWaiting);
  }

  async transcribe(options: TranscribeOptions): Promise<TranscriptionResult> {
    const duration = options.audio.length / this.sampleRate;
    if (options.audio.length === 0) return { text: "", segments: [], words: options.timestamps.includes("word") ? [] : undefined };
    const wantWords = options.timestamps.includes("word") && this.supportsWordTimestamps;
    const wantSegments = options.timestamps.includes("segment");
    const long = duration > this.settings.chunkLengthSeconds;
    const base = {
      task: "transcribe",
      ...(options.language ? { language: options.language } : {}),
      ...(long ? { chunk_length_s: this.settings.chunkLengthSeconds, stride_length_s: Math.min(this.settings.strideLengthSeconds, this.settings.chunkLengthSeconds / 3) } : {}),
      ...(options.temperature && options.temperature > 0 ? { do_sample: true, temperature: options.temperature } : {}),
    };
    return this.queue.run(async () => {
      const toWords = (chunks: PipelineChunk[] | undefined) =>
        (chunks ?? []).map((c) => ({ word: c.text.trim(), start: c.timestamp[0], end: c.timestamp[1] ?? duration })).filter((w) => w.word);
      // Word timestamps alone: one pass with token-level alignment gives the text too.
      if (wantWords && !wantSegments) {
        const aligned = await this.run(options.audio, { ...base, return_timestamps: "word" });
        const text = aligned.text.trim();
        return { text, segments: text ? [{ start: 0, end: duration, text }] : [], words: toWords(aligned.chunks) };
      }
      const main = await this.run(options.audio, { ...base, return_timestamps: wantSegments || long });
      const text = main.text.trim();
      const segments = (main.chunks ?? []).map((c) => ({ start: c.timestamp[0], end: c.timestamp[1] ?? duration, text: c.text.trim() }));
      if (segments.length === 0 && text) segments.push({ start: 0, end: duration, text });
      // Both granularities: a second pass aligns the words.
      const words = wantWords ? (text ? toWords((await this.run(options.audio, { ...base, return_timestamps: "word" })).chunks) : []) : undefined;
      return { text, segments, words };
    }, options.signal);
  }

  private async run(audio: Float32Array, kwargs: Record<string, unknown>): Promise<{ text: string; chunks?: PipelineChunk[] }> {
    try {
      return (await this.transcriber(audio, kwargs)) as { text: string; chunks?: PipelineChunk[] };
    } catch (error) {
      const message = (error as Error).message ?? "";
      if (isSilenceError(error)) return { text: "", chunks: [] };
      if (/Language .* is not supported/.test(message)) throw InvalidRequestError.forField(["language"], message);
      throw error;
    }
  }

  async dispose(): Promise<void> {
    await this.transcriber.dispose();
  }
}
