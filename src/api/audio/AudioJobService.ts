import type { Cost, Credits } from "../../billing/credits.js";
import { type CostLine, microsToUnits, totalUsd } from "../../billing/money.js";
import { countCharacters, musicCost, speechCost, UnpricedDurationError } from "../../billing/pricing.js";
import type { SpeechFormat } from "../../config/backendSettings.js";
import type { ModelEntry } from "../../config/modelRegistry.js";
import { InvalidRequestError, ModelNotFoundError } from "../../errors.js";
import type { AuthContext } from "../../http/requestContext.js";
import type { JobQueue } from "../../jobs/JobQueue.js";
import { JobFailedError, PaidJobs, type JobStatusBody } from "../../jobs/PaidJobs.js";
import type { ModelManager } from "../../models/ModelManager.js";
import type { JobRow } from "../../store/jobs.js";
import type { Db } from "../../store/Store.js";
import { MUSIC_ONLY_FIELDS, type QueueAudioRequest, type QuoteAudioRequest, SPEECH_ONLY_FIELDS } from "./jobSchema.js";
import { SPEECH_CONTENT_TYPES } from "./schema.js";
import type { SpeechService } from "./SpeechService.js";

export const AUDIO_JOB = "audio";

/**
 * What a queued speech job stores (jobs.input_json): everything needed to read the text again
 * after a restart. Jobs queued before music existed have no `kind`: they are speech.
 */
export interface SpeechJobInput {
  kind?: "speech";
  text: string;
  /** The voice as resolved when queued: a preset name, or the account's cloned voice handle (checked again when it runs). */
  voice: string;
  language?: string;
  speed: number;
  format: SpeechFormat;
  contentType: string;
  characters: number;
}

/** What a queued music job stores: the prompt and the clip's length, as checked when queued. */
export interface MusicJobInput {
  kind: "music";
  prompt: string;
  durationSeconds: number;
  /** Render the clip so its end runs on into its start (the model's music.loopCrossfadeSeconds). */
  loop: boolean;
  format: SpeechFormat;
  contentType: string;
}

export type AudioJobInput = SpeechJobInput | MusicJobInput;

export class AudioFailedError extends JobFailedError {
  constructor(job: JobRow) {
    super(job, "AUDIO_GENERATION_FAILED", "Audio generation failed");
  }
}

const field = (path: string, message: string) => InvalidRequestError.forField([path], message);

/** The clip's length in seconds: the request's (a number or a numeric string), else the model's default; one the model does not offer is a 400. */
export function musicDuration(entry: ModelEntry, requested: number | string | undefined): number {
  const music = entry.music;
  const seconds = requested === undefined ? music.defaultDurationSeconds : Number(requested);
  if (music.durationOptions && !music.durationOptions.includes(seconds)) throw field("duration_seconds", `${entry.id} makes clips of ${music.durationOptions.join(", ")} seconds`);
  if (seconds < music.minDurationSeconds || seconds > music.maxDurationSeconds)
    throw field("duration_seconds", `${entry.id} makes clips of ${music.minDurationSeconds} to ${music.maxDurationSeconds} seconds`);
  return seconds;
}

/**
 * Quotes, queues and looks up audio jobs (long speech on a text-to-speech model, clips on a
 * text-to-music model); the generation is the job queue's (audioJob.ts). Charged in full when
 * queued, refunded once on failure.
 */
export class AudioJobService {
  private readonly paid: PaidJobs;

  constructor(
    private readonly models: ModelManager,
    private readonly speech: SpeechService,
    db: Db,
    credits: Credits,
    jobs: JobQueue,
  ) {
    this.paid = new PaidJobs(db, credits, jobs, AUDIO_JOB);
  }

  /**
   * A speech or music model that runs on this node, by id, alias or standard name (tts-1). A
   * relayed speech model has its own limits: /audio/speech serves it.
   */
  entryFor(modelId: string): ModelEntry {
    const entry = this.models.get(modelId);
    if (entry.type !== "tts" && entry.type !== "music") throw new ModelNotFoundError(modelId);
    if (entry.backend === "upstream") throw field("model", `${entry.id} is relayed to another server; audio jobs run on local speech and music models`);
    return entry;
  }

  /**
   * The price in USD: a priced speech model charges per character, so then `character_count` is
   * needed (a free one quotes 0); a music model charges for `duration_seconds` (default: its default duration).
   */
  quote(request: QuoteAudioRequest): number {
    const entry = this.entryFor(request.model);
    if (entry.type === "music") {
      if (request.character_count !== undefined) throw field("character_count", `${entry.id} is a music model: it is priced by duration_seconds`);
      return microsToUnits(totalUsd(this.musicLines(entry, musicDuration(entry, request.duration_seconds))));
    }
    if (request.duration_seconds !== undefined) throw field("duration_seconds", `${entry.id} is a speech model: its audio lasts as long as the text takes to read`);
    if (request.character_count === undefined) {
      if (speechCost(entry, 1).length > 0) throw field("character_count", `${entry.id} is priced per character: give the text's character_count`);
      return 0;
    }
    return microsToUnits(totalUsd(speechCost(entry, request.character_count)));
  }

  /** Checks the request against the model (a speech model's voice included, which loads it), charges and queues. */
  async queue(request: QueueAudioRequest, auth: AuthContext | undefined): Promise<{ entry: ModelEntry; queueId: string; cost: Cost }> {
    const entry = this.entryFor(request.model);
    if (entry.type === "music") return { entry, ...this.queueMusic(entry, request, auth) };
    for (const name of MUSIC_ONLY_FIELDS) {
      if (request[name] !== undefined) throw field(name, `${entry.id} is a speech model; ${name} applies to music models`);
    }
    const format = request.response_format ?? entry.speech.defaultFormat;
    if (!entry.speech.supportedFormats.includes(format)) throw field("response_format", `${entry.id} supports ${entry.speech.supportedFormats.join(", ")}`);
    const lease = await this.models.acquire(entry.id, "speech");
    let voice: string;
    try {
      const resolved = this.speech.resolveVoice(entry, lease.engine, request.voice, auth?.accountId);
      voice = resolved.kind === "cloned" ? resolved.id : resolved.name;
    } finally {
      lease.release();
    }
    const characters = countCharacters(request.prompt);
    const input: SpeechJobInput = {
      kind: "speech",
      text: request.prompt,
      voice,
      language: request.language_code,
      speed: request.speed ?? 1,
      format,
      contentType: SPEECH_CONTENT_TYPES[format],
      characters,
    };
    const { queueId, cost } = this.paid.queue({ model: entry.id, auth, lines: speechCost(entry, characters), input, note: "audio job, charged when queued" });
    return { entry, queueId, cost };
  }

  /**
   * A music clip: the prompt, a duration the model offers, a format it writes. What MusicGen-like
   * models cannot do is a 400 naming the field: lyrics (they make no vocals, so
   * force_instrumental holds either way), voices, a language, a speed.
   */
  private queueMusic(entry: ModelEntry, request: QueueAudioRequest, auth: AuthContext | undefined): { queueId: string; cost: Cost } {
    const music = entry.music;
    for (const name of SPEECH_ONLY_FIELDS) {
      if (request[name] !== undefined) throw field(name, `${entry.id} is a music model; ${name} applies to speech models`);
    }
    if (request.lyrics_prompt !== undefined) throw field("lyrics_prompt", `${entry.id} makes instrumental music only: it takes no lyrics`);
    if (request.lyrics_optimizer === true) throw field("lyrics_optimizer", `${entry.id} makes instrumental music only: it writes no lyrics`);
    if (request.loop === true && music.loopCrossfadeSeconds <= 0) throw field("loop", `${entry.id} does not render loops`);
    const characters = countCharacters(request.prompt);
    if (characters > music.promptCharacterLimit)
      throw field("prompt", `${entry.id} takes prompts of at most ${music.promptCharacterLimit} characters (this one has ${characters})`);
    const format = request.response_format ?? music.defaultFormat;
    if (!music.supportedFormats.includes(format)) throw field("response_format", `${entry.id} supports ${music.supportedFormats.join(", ")}`);
    const durationSeconds = musicDuration(entry, request.duration_seconds);
    const input: MusicJobInput = { kind: "music", prompt: request.prompt, durationSeconds, loop: request.loop === true, format, contentType: SPEECH_CONTENT_TYPES[format] };
    return this.paid.queue({ model: entry.id, auth, lines: this.musicLines(entry, durationSeconds), input, note: "music job, charged when queued" });
  }

  private musicLines(entry: ModelEntry, seconds: number): CostLine[] {
    try {
      return musicCost(entry, seconds);
    } catch (error) {
      if (error instanceof UnpricedDurationError) throw field("duration_seconds", error.message);
      throw error;
    }
  }

  find(model: string, queueId: string, auth: AuthContext | undefined): JobRow {
    return this.paid.find(model, queueId, auth);
  }

  status(job: JobRow): JobStatusBody {
    return this.paid.status(job);
  }

  mediaPath(job: JobRow): string {
    return this.paid.mediaPath(job);
  }

  complete(job: JobRow): void {
    this.paid.complete(job, "audio");
  }
}
