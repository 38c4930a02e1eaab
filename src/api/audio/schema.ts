import { z } from "zod";
import { SPEECH_FORMATS, type SpeechFormat } from "../../config/backendSettings.js";
import { Cost } from "../chat/schema.js";

/**
 * The audio endpoints: POST /audio/speech (JSON), POST /audio/transcriptions and
 * POST /audio/voices (multipart/form-data), GET /audio/voices, DELETE /audio/voices/{id}.
 * Field names are the reference's; the chat-completions standard's spellings are accepted as
 * aliases (instructions for prompt, stream_format "audio" for streaming).
 */

/** Content-Type of each speech format (the reference's list). Opus comes in an Ogg container. */
export const SPEECH_CONTENT_TYPES: Readonly<Record<SpeechFormat, string>> = Object.freeze({
  mp3: "audio/mpeg",
  opus: "audio/opus",
  aac: "audio/aac",
  flac: "audio/flac",
  wav: "audio/wav",
  pcm: "audio/pcm",
});

/** Raw PCM output is 16-bit little-endian mono at this rate, whatever the model's own rate (the standard's convention). */
export const PCM_SAMPLE_RATE = 24000;

/** Text is limited in characters (Unicode code points), not UTF-16 units. */
const Input = z
  .string()
  .min(1)
  .refine((s) => [...s].length <= 4096, { message: "Too big: expected at most 4096 characters" });

const SpeechFields = z.looseObject({
  input: Input,
  model: z.string().min(1).optional(),
  voice: z.string().min(1).max(512).optional(),
  response_format: z.enum(SPEECH_FORMATS).optional(),
  speed: z.number().min(0.25).max(4).default(1),
  streaming: z.boolean().default(false),
  language: z.string().min(2).max(32).optional(),
  prompt: z.string().max(500).optional(),
  temperature: z.number().min(0).max(2).optional(),
  top_p: z.number().min(0).max(1).optional(),
  /** audio: raw bytes as they are synthesised (streaming: true); sse: speech.audio.delta events with base64 audio, then speech.audio.done. */
  stream_format: z.enum(["audio", "sse"]).optional(),
});

function acceptSpeechAliases(input: unknown): unknown {
  if (!input || typeof input !== "object" || Array.isArray(input)) return input;
  const body = { ...(input as Record<string, unknown>) };
  if (body.prompt === undefined && typeof body.instructions === "string") body.prompt = body.instructions;
  delete body.instructions;
  // The standard's custom voice reference: { id }.
  const voice = body.voice as { id?: unknown } | null | undefined;
  if (voice && typeof voice === "object" && !Array.isArray(voice) && typeof voice.id === "string") body.voice = voice.id;
  // The standard's stream_format "audio" is a raw audio stream, which is what streaming: true sends.
  if (body.streaming === undefined && body.stream_format === "audio") body.streaming = true;
  return body;
}

export const SpeechRequest = z.preprocess(acceptSpeechAliases, SpeechFields);
export type SpeechRequest = z.infer<typeof SpeechFields>;

export const TRANSCRIPTION_FORMATS = ["json", "text", "srt", "vtt", "verbose_json"] as const;
export type TranscriptionFormat = (typeof TRANSCRIPTION_FORMATS)[number];

/** Multipart fields are strings: "true"/"false" for booleans. */
const FormBoolean = z.union([z.boolean(), z.enum(["true", "false", "1", "0"]).transform((v) => v === "true" || v === "1")]);
const FormNumber = z.union([
  z.number(),
  z
    .string()
    .regex(/^-?\d+(\.\d+)?$/, "Invalid input: expected a number")
    .transform(Number),
]);

const TranscriptionFields = z.looseObject({
  model: z.string().min(1).optional(),
  language: z.string().min(2).max(32).optional(),
  /** Text the first 30 s window is conditioned on (Whisper keeps its last 223 tokens): names, spellings, the style of the text before. */
  prompt: z.string().max(4096).optional(),
  response_format: z.enum(TRANSCRIPTION_FORMATS).default("json"),
  /** The reference's switch: segment timestamps, and word timestamps where the model has them. */
  timestamps: FormBoolean.default(false),
  timestamp_granularities: z.array(z.enum(["segment", "word"])).default([]),
  temperature: FormNumber.pipe(z.number().min(0).max(1)).optional(),
  /** Server-sent events: transcript.text.delta as segments are decoded, then transcript.text.done. */
  stream: FormBoolean.default(false),
});

/** The multipart encodings of arrays: timestamp_granularities[] (openai-node) or a repeated field. */
function collectGranularities(input: unknown): unknown {
  if (!input || typeof input !== "object") return input;
  const body = { ...(input as Record<string, unknown>) };
  const values = [body["timestamp_granularities[]"], body.timestamp_granularities].flat().filter((v) => v !== undefined);
  delete body["timestamp_granularities[]"];
  if (values.length) body.timestamp_granularities = values;
  return body;
}

export const TranscriptionRequest = z.preprocess(collectGranularities, TranscriptionFields);
export type TranscriptionRequest = z.infer<typeof TranscriptionFields>;

/** POST /audio/translations: the transcription fields (`language` is a hint about the spoken language), answered in English. */
export const TranslationRequest = z.preprocess(
  collectGranularities,
  TranscriptionFields.extend({ stream: FormBoolean.pipe(z.literal(false, "streaming is available for transcriptions; omit stream")).optional() }),
);

/** POST /video/transcriptions (JSON): the audio of a video at a URL the node fetches (under --web-scraping on). */
export const VideoTranscriptionRequest = z.strictObject({
  url: z.url({ protocol: /^https?$/, error: "url must be an absolute http(s) URL of a video or audio file" }),
  response_format: z.enum(["json", "text"]).default("json"),
  /** This node's extension: the speech-to-text model (default: the node's default asr model). */
  model: z.string().min(1).optional(),
  language: z.string().min(2).max(32).optional(),
});
export type VideoTranscriptionRequest = z.infer<typeof VideoTranscriptionRequest>;

/** The same, uploaded as multipart/form-data (`file`): this node's extension for videos not on the web. */
export const VideoTranscriptionFields = z.looseObject({
  response_format: z.enum(["json", "text"]).default("json"),
  model: z.string().min(1).optional(),
  language: z.string().min(2).max(32).optional(),
});

export const VideoTranscriptionResponse = z.object({
  transcript: z.string(),
  lang: z.string().optional().describe("The spoken language, when the model knows it"),
});

export const CreateVoiceRequest = z.looseObject({
  model: z.string().min(1).optional(),
  /** A label for the caller's own listing. */
  name: z.string().min(1).max(128).optional(),
});
export type CreateVoiceRequest = z.infer<typeof CreateVoiceRequest>;

/** The reference's response: exactly the handle and the model it is bound to. */
export const CreateVoiceResponse = z.strictObject({ id: z.string(), model: z.string() });

export const VoiceRecord = z.object({
  id: z.string(),
  object: z.literal("voice"),
  model: z.string(),
  name: z.string().nullable(),
  sample_seconds: z.number(),
  created_at: z.number().int(),
  expires_at: z.number().int(),
});
export type VoiceRecord = z.infer<typeof VoiceRecord>;

const Segment = z.object({ text: z.string(), start: z.number(), end: z.number() });
const Word = z.object({ word: z.string(), start: z.number(), end: z.number() });

/** response_format json: the reference's shape plus the standard's usage, and the cost. */
export const TranscriptionResponse = z.object({
  text: z.string(),
  duration: z.number(),
  timestamps: z.object({ segment: z.array(Segment).optional(), word: z.array(Word).optional() }).optional(),
  usage: z.object({ type: z.literal("duration"), seconds: z.number() }),
  cost: Cost,
});

/**
 * response_format verbose_json: the standard's shape. Segment statistics are those of the 30 s
 * window the segment was decoded in, as Whisper reports them.
 */
export const VerboseTranscriptionResponse = z.object({
  task: z.enum(["transcribe", "translate"]),
  language: z.string(),
  duration: z.number(),
  text: z.string(),
  segments: z.array(
    z.object({
      id: z.number().int(),
      /** The window's start, in 10 ms mel frames. */
      seek: z.number().int(),
      start: z.number(),
      end: z.number(),
      text: z.string(),
      /** Token ids, timestamp tokens included. */
      tokens: z.array(z.number().int()),
      temperature: z.number(),
      /** Mean log probability of the window's tokens (end-of-text included). */
      avg_logprob: z.number(),
      /** UTF-8 bytes of the window's text over its zlib-compressed bytes. */
      compression_ratio: z.number(),
      /** Probability of the no-speech token at the window's first step (0 for models without one). */
      no_speech_prob: z.number(),
    }),
  ),
  words: z.array(Word).optional(),
  usage: z.object({ type: z.literal("duration"), seconds: z.number() }),
  cost: Cost,
});

export const VoiceList = z.object({ object: z.literal("list"), data: z.array(VoiceRecord) });
export const DeleteVoiceResponse = z.object({ id: z.string(), object: z.literal("voice"), deleted: z.literal(true) });

/** Streamed transcription (stream: true): the standard's events. */
export const TranscriptTextDelta = z.object({ type: z.literal("transcript.text.delta"), delta: z.string() });
export const TranscriptTextDone = z.object({
  type: z.literal("transcript.text.done"),
  text: z.string(),
  usage: z.object({ type: z.literal("tokens"), input_tokens: z.number().int(), output_tokens: z.number().int(), total_tokens: z.number().int() }),
  cost: Cost,
});

/** Speech as server-sent events (stream_format: "sse"): the standard's events. */
export const SpeechAudioDelta = z.object({ type: z.literal("speech.audio.delta"), audio: z.string().describe("A piece of the encoded audio stream, base64") });
export const SpeechAudioDone = z.object({
  type: z.literal("speech.audio.done"),
  usage: z.object({ input_tokens: z.number().int(), output_tokens: z.number().int(), total_tokens: z.number().int() }),
  cost: Cost,
});
