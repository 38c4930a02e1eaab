import type { z } from "zod";
import type { TranscriptionResponse, VerboseTranscriptionResponse } from "./schema.js";
import type { Cost } from "../../billing/credits.js";
import { transcriptionCost } from "../../billing/pricing.js";
import type { RequestMeter } from "../../billing/RequestMeter.js";
import type { ModelEntry } from "../../config/modelRegistry.js";
import type { TimestampGranularity, TranscriptionEngine, TranscriptionResult, TranscriptionSegment } from "../../engines/types.js";
import { whisperLanguageName } from "../../engines/whisper/whisperLanguages.js";
import { InvalidRequestError, PayloadTooLargeError, UndecodableMediaError } from "../../errors.js";
import { withDeadline } from "../../http/withDeadline.js";
import type { MultipartPart } from "../../http/multipart.js";
import { decodeAudio, FfmpegError, probeContainer } from "../../media/ffmpeg.js";
import type { ModelLease, ModelManager } from "../../models/ModelManager.js";
import type { TranscriptionFormat, TranscriptionRequest } from "./schema.js";

export interface PreparedTranscription {
  entry: ModelEntry;
  engine: TranscriptionEngine;
  /** Holds the model loaded until the route releases it. */
  lease: ModelLease<"transcription">;
  file: MultipartPart;
  /** transcribe, or translate into English (POST /audio/translations). */
  task: TranscriptionTask;
  format: TranscriptionFormat;
  granularities: TimestampGranularity[];
  language?: string;
  prompt?: string;
  temperature?: number;
  meter: RequestMeter;
  /** Set once the audio is decoded. */
  audioSeconds: number;
  /** Audio covered by the segments decoded so far: what a stream cut short is charged for. */
  transcribedSeconds: number;
}

export type TranscriptionTask = "transcribe" | "translate";

/** The standard's usage on a streamed transcription's done event: Whisper's 50 encoder positions per second of audio in, text tokens out. */
export function streamUsage(job: PreparedTranscription, outputTokens: number) {
  const input = Math.ceil(job.audioSeconds * 50);
  return { type: "tokens" as const, input_tokens: input, output_tokens: outputTokens, total_tokens: input + outputTokens };
}

/** A finished transcription in the requested response format. */
export type TranscriptionBody =
  | { kind: "json"; body: z.infer<typeof TranscriptionResponse> | z.infer<typeof VerboseTranscriptionResponse> }
  | { kind: "text"; contentType: string; body: string };

/** Wire transcription request -> decoded audio -> engine -> the five response formats. */
export class TranscriptionService {
  constructor(
    private readonly models: ModelManager,
    private readonly requestTimeoutMs: number,
    private readonly maxUploadBytes: number,
  ) {}

  async prepare(
    request: TranscriptionRequest,
    file: MultipartPart | undefined,
    meterFor: (entry: ModelEntry) => RequestMeter,
    task: TranscriptionTask = "transcribe",
  ): Promise<PreparedTranscription> {
    if (!file || file.data.length === 0) throw InvalidRequestError.forField(["file"], 'upload the audio as the multipart field "file"');
    if (file.data.length > this.maxUploadBytes) {
      throw new PayloadTooLargeError(`File exceeds the maximum allowed size of ${Math.round(this.maxUploadBytes / 1e6)} MB.`);
    }
    const modelId = request.model ?? this.models.defaultFor("asr")?.id;
    if (!modelId) throw InvalidRequestError.forField(["model"], "no transcription model is configured on this node");
    const entry = this.models.get(modelId, "asr");
    const lease = await this.models.acquire(entry.id, "transcription");
    const { engine } = lease;
    try {
      // The reference's `timestamps` asks for segments and (where the model has them) words; the standard's granularities ask exactly.
      const granularities = new Set<TimestampGranularity>(request.timestamp_granularities);
      if (request.timestamps) {
        granularities.add("segment");
        if (engine.supportsWordTimestamps) granularities.add("word");
      }
      if (request.response_format === "verbose_json" || request.response_format === "srt" || request.response_format === "vtt") granularities.add("segment");
      if (granularities.has("word") && !engine.supportsWordTimestamps) {
        throw InvalidRequestError.forField(["timestamp_granularities"], `${entry.id} has no word timestamps`);
      }
      if (task === "translate" && !engine.supportsTranslation) throw InvalidRequestError.forField(["model"], `${entry.id} is English-only and cannot translate`);
      return {
        entry,
        engine,
        lease,
        file,
        task,
        format: request.response_format,
        granularities: [...granularities],
        language: request.language,
        prompt: request.prompt,
        temperature: request.temperature,
        meter: meterFor(entry),
        audioSeconds: 0,
        transcribedSeconds: 0,
      };
    } catch (error) {
      lease.release();
      throw error;
    }
  }

  /** Decodes, holds the price of the audio's length, transcribes, settles. `onSegment` sees each segment as it is decoded (a stream). */
  async run(
    job: PreparedTranscription,
    clientSignal: AbortSignal,
    onSegment?: (segment: TranscriptionSegment) => void,
  ): Promise<{ result: TranscriptionBody; cost: Cost; engineResult: TranscriptionResult }> {
    const result = await withDeadline(clientSignal, this.requestTimeoutMs, async (signal) => {
      // What ffmpeg cannot read, or holds no audio, is refused now, not once the transcriptions ahead of it are done.
      const { container, hasAudio } = await probeContainer(job.file.data);
      if (!container || !hasAudio) throw new UndecodableMediaError("the audio file");
      // Decoded when the engine is free for it, so waiting requests hold their uploads, not their samples.
      const audio = async () => {
        const limit = job.entry.transcription.maxAudioSeconds;
        // No further than a second past what the model accepts and the caller can pay for: a few
        // MB of FLAC can hold hours of silence, and a caller without the credit to transcribe them
        // should not cost the node their decoding. Longer audio is refused below (413, or reserve's 402).
        const maxSeconds = job.meter.mostAffordable(Math.ceil(limit), (seconds) => transcriptionCost(job.entry, seconds));
        let samples: Float32Array;
        try {
          samples = await decodeAudio(job.file.data, job.engine.sampleRate, signal, { maxSeconds });
        } catch (error) {
          if (error instanceof FfmpegError && !signal.aborted) throw new UndecodableMediaError("the audio file");
          throw error;
        }
        job.audioSeconds = samples.length / job.engine.sampleRate;
        if (job.audioSeconds > limit) throw new PayloadTooLargeError(`The audio is longer than ${limit} s; ${job.entry.id} accepts at most ${limit} s.`);
        job.meter.reserve(transcriptionCost(job.entry, job.audioSeconds));
        return samples;
      };
      return job.engine.transcribe({
        audio,
        task: job.task,
        onSegment: (segment) => {
          job.transcribedSeconds = Math.max(job.transcribedSeconds, segment.end);
          onSegment?.(segment);
        },
        language: job.language,
        prompt: job.prompt,
        temperature: job.temperature,
        timestamps: job.granularities,
        signal,
      });
    });
    job.transcribedSeconds = job.audioSeconds;
    const cost = job.meter.settle(transcriptionCost(job.entry, job.audioSeconds));
    return { result: formatTranscription(job, result, cost), cost, engineResult: result };
  }

  /** Charges the audio transcribed so far (all of it once done; nothing when no segment was decoded). Exactly once. */
  settle(job: PreparedTranscription): Cost {
    return job.meter.settle(transcriptionCost(job.entry, Math.min(job.transcribedSeconds, job.audioSeconds)));
  }
}

const round = (seconds: number) => Math.round(seconds * 1000) / 1000;

export function formatTranscription(job: PreparedTranscription, result: TranscriptionResult, cost: Cost): TranscriptionBody {
  const duration = round(job.audioSeconds);
  const usage = { type: "duration" as const, seconds: Math.ceil(job.audioSeconds) };
  const segments = result.segments.map((s) => ({ text: s.text, start: round(s.start), end: round(s.end) }));
  const language = result.language ?? job.language;
  const words = result.words?.map((w) => ({ word: w.word, start: round(w.start), end: round(w.end) }));
  switch (job.format) {
    case "text":
      return { kind: "text", contentType: "text/plain; charset=utf-8", body: result.text };
    case "srt":
      return { kind: "text", contentType: "text/plain; charset=utf-8", body: toSrt(segments) };
    case "vtt":
      return { kind: "text", contentType: "text/vtt; charset=utf-8", body: toVtt(segments) };
    case "verbose_json":
      return {
        kind: "json",
        body: {
          task: job.task,
          // The hint, else what the model detected (an English-only model hears English).
          language: language ? whisperLanguageName(language) : "english",
          duration,
          text: result.text,
          segments: result.segments.map((s, id) => ({
            id,
            seek: s.seek ?? Math.floor(s.start * 100),
            start: round(s.start),
            end: round(s.end),
            text: s.text,
            tokens: s.tokens ?? [],
            temperature: s.temperature ?? job.temperature ?? 0,
            avg_logprob: s.avgLogprob ?? 0,
            compression_ratio: s.compressionRatio ?? 0,
            no_speech_prob: s.noSpeechProb ?? 0,
          })),
          ...(job.granularities.includes("word") ? { words: words ?? [] } : {}),
          usage,
          cost,
        },
      };
    case "json": {
      const timestamps: NonNullable<z.infer<typeof TranscriptionResponse>["timestamps"]> = {};
      if (job.granularities.includes("segment")) timestamps.segment = segments;
      if (job.granularities.includes("word")) timestamps.word = words ?? [];
      return { kind: "json", body: { text: result.text, duration, ...(Object.keys(timestamps).length ? { timestamps } : {}), usage, cost } };
    }
  }
}

/** 3725.5 -> "01:02:05,500" (SRT) or "01:02:05.500" (WebVTT). */
export function formatTimestamp(seconds: number, separator: "," | "."): string {
  const ms = Math.round(seconds * 1000);
  const pad = (n: number, width = 2) => String(n).padStart(width, "0");
  return `${pad(Math.floor(ms / 3_600_000))}:${pad(Math.floor(ms / 60_000) % 60)}:${pad(Math.floor(ms / 1000) % 60)}${separator}${pad(ms % 1000, 3)}`;
}

export function toSrt(segments: readonly { text: string; start: number; end: number }[]): string {
  return segments.map((s, i) => `${i + 1}\n${formatTimestamp(s.start, ",")} --> ${formatTimestamp(s.end, ",")}\n${s.text}\n`).join("\n");
}

export function toVtt(segments: readonly { text: string; start: number; end: number }[]): string {
  return `WEBVTT\n\n${segments.map((s) => `${formatTimestamp(s.start, ".")} --> ${formatTimestamp(s.end, ".")}\n${s.text}\n`).join("\n")}`;
}
