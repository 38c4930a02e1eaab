import { z } from "zod";
import { SPEECH_FORMATS } from "../../config/backendSettings.js";
import { VideoStatusResponse } from "../video/schema.js";

/**
 * Audio jobs: the reference's Quote/Queue/Retrieve/CompleteAudioRequest. On this node a job is
 * either long speech (a text-to-speech model reads a text longer than /audio/speech takes,
 * sentence by sentence) or music (a text-to-music model plays `prompt` for `duration_seconds`),
 * into one file that survives restarts until it is completed.
 */

/** The most characters one job reads (Unicode code points): about two and a half hours of speech. */
export const AUDIO_JOB_MAX_CHARACTERS = 100_000;

/** Fields of the reference's music models: refused with a 400 naming each when the model is a speech model. */
export const MUSIC_ONLY_FIELDS = ["lyrics_prompt", "duration_seconds", "force_instrumental", "lyrics_optimizer", "loop"] as const;

/** Fields of speech (and voice-enabled music) models: refused with a 400 naming each on this node's music models, which have no voices. */
export const SPEECH_ONLY_FIELDS = ["voice", "language_code", "speed"] as const;

/** The reference's duration hint: a positive integer or a numeric string. */
const DurationSeconds = z.union([z.number().int().positive(), z.string().regex(/^\d+$/, "a whole number of seconds")]);

export const QuoteAudioRequest = z.looseObject({
  model: z.string().min(1),
  duration_seconds: DurationSeconds.optional(),
  /** Required for speech models priced per character; a music model is priced by duration_seconds (default: the model's). */
  character_count: z.number().int().positive().optional(),
});
export type QuoteAudioRequest = z.infer<typeof QuoteAudioRequest>;

export const QuoteAudioResponse = z.object({ quote: z.number() });

export const QueueAudioRequest = z.looseObject({
  model: z.string().min(1),
  /** For a speech model: the text to read; for a music model: what the music should be like (its prompt_character_limit applies). */
  prompt: z
    .string()
    .min(1)
    .refine((s) => [...s].length <= AUDIO_JOB_MAX_CHARACTERS, { message: `Too big: expected at most ${AUDIO_JOB_MAX_CHARACTERS} characters` }),
  lyrics_prompt: z.string().optional(),
  duration_seconds: DurationSeconds.optional(),
  force_instrumental: z.boolean().optional(),
  lyrics_optimizer: z.boolean().optional(),
  loop: z.boolean().optional(),
  voice: z.string().min(1).max(512).optional(),
  language_code: z.string().min(2).max(32).optional(),
  speed: z.number().min(0.25).max(4).optional(),
  /** Hearth extension: the file's format (default: the model's speech.defaultFormat). */
  response_format: z.enum(SPEECH_FORMATS).optional(),
});
export type QueueAudioRequest = z.infer<typeof QueueAudioRequest>;

export const QueueAudioResponse = z.object({
  model: z.string(),
  queue_id: z.string(),
  status: z.literal("QUEUED"),
});
export type QueueAudioResponse = z.infer<typeof QueueAudioResponse>;

export const RetrieveAudioRequest = z.looseObject({
  model: z.string().min(1),
  queue_id: z.string().min(1),
  delete_media_on_completion: z.boolean().default(false),
});

/** While the job runs: the same body as a video job's (the reference's three fields, then `state`, `progress` and `queue_position`). */
export const AudioStatusResponse = VideoStatusResponse;

export const CompleteAudioRequest = z.looseObject({ model: z.string().min(1), queue_id: z.string().min(1) });
export const CompleteAudioResponse = z.object({ success: z.boolean() });
