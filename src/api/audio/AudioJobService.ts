import type { Cost, Credits } from "../../billing/credits.js";
import { microsToUnits, totalUsd } from "../../billing/money.js";
import { countCharacters, speechCost } from "../../billing/pricing.js";
import type { SpeechFormat } from "../../config/backendSettings.js";
import type { ModelEntry } from "../../config/modelRegistry.js";
import { InvalidRequestError } from "../../errors.js";
import type { AuthContext } from "../../http/requestContext.js";
import type { JobQueue } from "../../jobs/JobQueue.js";
import { JobFailedError, PaidJobs, type JobStatusBody } from "../../jobs/PaidJobs.js";
import type { ModelManager } from "../../models/ModelManager.js";
import type { JobRow } from "../../store/jobs.js";
import type { Db } from "../../store/Store.js";
import { MUSIC_ONLY_FIELDS, type QueueAudioRequest, type QuoteAudioRequest } from "./jobSchema.js";
import { SPEECH_CONTENT_TYPES } from "./schema.js";
import type { SpeechService } from "./SpeechService.js";

export const AUDIO_JOB = "audio";

/** What a queued audio job stores (jobs.input_json): everything needed to read the text again after a restart. */
export interface AudioJobInput {
  text: string;
  /** The voice as resolved when queued: a preset name, or the account's cloned voice handle (checked again when it runs). */
  voice: string;
  language?: string;
  speed: number;
  format: SpeechFormat;
  contentType: string;
  characters: number;
}

export class AudioFailedError extends JobFailedError {
  constructor(job: JobRow) {
    super(job, "AUDIO_GENERATION_FAILED", "Audio generation failed");
  }
}

const field = (path: string, message: string) => InvalidRequestError.forField([path], message);

/**
 * Quotes, queues and looks up audio jobs (long speech on a text-to-speech model); reading the
 * text is the job queue's (audioJob.ts). Charged in full when queued, refunded once on failure.
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

  /** A speech model that reads on this node (a relayed one has its own limits: /audio/speech serves it). */
  entryFor(modelId: string): ModelEntry {
    const entry = this.models.get(modelId, "tts");
    if (entry.backend === "upstream") throw field("model", `${entry.id} is relayed to another server; audio jobs run on local speech models`);
    return entry;
  }

  /** The price in USD: a priced speech model charges per character, so then `character_count` is needed (a free one quotes 0). */
  quote(request: QuoteAudioRequest): number {
    const entry = this.entryFor(request.model);
    if (request.duration_seconds !== undefined) throw field("duration_seconds", `${entry.id} is a speech model: its audio lasts as long as the text takes to read`);
    if (request.character_count === undefined) {
      if (speechCost(entry, 1).length > 0) throw field("character_count", `${entry.id} is priced per character: give the text's character_count`);
      return 0;
    }
    return microsToUnits(totalUsd(speechCost(entry, request.character_count)));
  }

  /** Checks the request against the model (voice included, which loads it), charges and queues. */
  async queue(request: QueueAudioRequest, auth: AuthContext | undefined): Promise<{ entry: ModelEntry; queueId: string; cost: Cost }> {
    const entry = this.entryFor(request.model);
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
    const input: AudioJobInput = {
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

  find(model: string, queueId: string, auth: AuthContext | undefined): JobRow {
    return this.paid.find(model, queueId, auth);
  }

  status(job: JobRow): JobStatusBody {
    return this.paid.status(job);
  }

  read(job: JobRow): Buffer {
    return this.paid.read(job);
  }

  complete(job: JobRow): void {
    this.paid.complete(job, "audio");
  }
}
