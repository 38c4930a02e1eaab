import { randomBytes } from "node:crypto";
import { mkdirSync, rmSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { ModelEntry } from "../../config/modelRegistry.js";
import { InvalidRequestError, NotFoundError, PayloadTooLargeError, UndecodableMediaError } from "../../errors.js";
import type { MultipartForm } from "../../http/multipart.js";
import { decodeAudio, FfmpegError, probeContainer } from "../../media/ffmpeg.js";
import type { ModelManager } from "../../models/ModelManager.js";
import { deleteClonedVoice, deleteExpiredClonedVoices, insertClonedVoice, listClonedVoices, type ClonedVoice } from "../../store/clonedVoices.js";
import type { Db } from "../../store/Store.js";
import type { CreateVoiceRequest, VoiceRecord } from "./schema.js";
import { DAY_MS } from "../../time.js";

/** ffmpeg demuxer names -> the container names models advertise in voice_cloning.accepted_formats. */
const CONTAINERS: Record<string, string> = {
  wav: "wav",
  mp3: "mp3",
  flac: "flac",
  ogg: "ogg",
  aac: "aac",
  "mov,mp4,m4a,3gp,3g2,mj2": "m4a",
  "matroska,webm": "webm",
};

/** Rows of a Kokoro voice pack: a cloned voice is written as one, every row the same style. */
const VOICE_PACK_ROWS = 510;

/**
 * Voice cloning: a reference sample -> the speaker encoder's style vector, stored under a
 * vv_ handle bound to the caller's account and one model. The vector lives in SQLite; the
 * sample (for re-encoding with a better encoder later) and the vector as a Kokoro voice pack
 * (drop it into a model's voices/ folder to make it a preset) live in <dataDir>/voices/.
 */
export class VoiceService {
  private readonly dir: string;

  constructor(
    private readonly models: ModelManager,
    private readonly db: Db,
    dataDir: string,
    private readonly now: () => number,
    private readonly maxUploadBytes: number,
  ) {
    this.dir = join(dataDir, "voices");
  }

  /** The model a request names, which must clone voices; without one, the first model that does. */
  cloningModel(request: CreateVoiceRequest): ModelEntry {
    if (request.model) {
      const entry = this.models.get(request.model, "tts");
      if (!entry.voiceCloning) throw InvalidRequestError.forField(["model"], `${entry.id} does not support voice cloning`);
      return entry;
    }
    const entry = this.models.list().find((m) => m.type === "tts" && m.voiceCloning);
    if (!entry) throw InvalidRequestError.forField(["model"], "no model on this node supports voice cloning");
    return entry;
  }

  async create(entry: ModelEntry, request: CreateVoiceRequest, form: MultipartForm, accountId: string, signal: AbortSignal): Promise<ClonedVoice> {
    const settings = entry.voiceCloning!;
    const file = form.file("file");
    if (!file || file.data.length === 0) throw InvalidRequestError.forField(["file"], 'upload the reference sample as the multipart field "file"');
    if (file.data.length > this.maxUploadBytes) {
      throw new PayloadTooLargeError(`File exceeds the maximum allowed size of ${Math.round(this.maxUploadBytes / 1e6)} MB.`);
    }
    const { container, hasAudio } = await probeContainer(file.data);
    if (!container || !hasAudio) throw new UndecodableMediaError("the voice sample");
    const format = CONTAINERS[container] ?? container;
    if (!settings.acceptedFormats.includes(format)) {
      throw InvalidRequestError.forField(["file"], `${entry.id} accepts ${settings.acceptedFormats.join(", ")} samples, not ${format}`);
    }
    const lease = await this.models.acquire(entry.id, "speech");
    const { engine } = lease;
    try {
      if (engine.output !== "pcm" || !engine.cloning) throw InvalidRequestError.forField(["model"], `${entry.id} does not support voice cloning`);
      let samples: Float32Array;
      try {
        samples = await decodeAudio(file.data, engine.cloning.sampleRate, signal, { maxSeconds: settings.maxSampleSeconds });
      } catch (error) {
        if (error instanceof FfmpegError) throw new UndecodableMediaError("the voice sample");
        throw error;
      }
      const seconds = samples.length / engine.cloning.sampleRate;
      if (seconds < settings.minSampleSeconds) {
        throw InvalidRequestError.forField(
          ["file"],
          `the sample is ${seconds.toFixed(2)} s; at least ${settings.minSampleSeconds} s is needed (${settings.recommendedSampleSeconds} s or more recommended)`,
        );
      }
      if (seconds > settings.maxSampleSeconds)
        throw InvalidRequestError.forField(["file"], `the sample is longer than ${settings.maxSampleSeconds} s; at most ${settings.maxSampleSeconds} s is accepted`);
      const embedding = await engine.cloning.embed(samples, signal);

      const id = `vv_${randomBytes(12).toString("hex")}`;
      const now = this.now();
      const voice: ClonedVoice = {
        id,
        accountId,
        modelId: entry.id,
        name: request.name ?? null,
        embedding,
        sampleFile: `${id}.${format}`,
        sampleFormat: format,
        sampleSeconds: seconds,
        createdAt: now,
        lastUsedAt: now,
        expiresAt: now + settings.retentionDays * DAY_MS,
      };
      mkdirSync(this.dir, { recursive: true });
      const pack = new Float32Array(VOICE_PACK_ROWS * embedding.length);
      for (let row = 0; row < VOICE_PACK_ROWS; row++) pack.set(embedding, row * embedding.length);
      try {
        // Asynchronously: a sample may be up to --max-upload-mb.
        await writeFile(join(this.dir, voice.sampleFile), file.data);
        await writeFile(join(this.dir, `${id}.bin`), new Uint8Array(pack.buffer));
        insertClonedVoice(this.db, voice);
      } catch (error) {
        this.removeFiles(voice);
        throw error;
      }
      return voice;
    } finally {
      lease.release();
    }
  }

  list(accountId: string): ClonedVoice[] {
    this.purgeExpired();
    return listClonedVoices(this.db, accountId, this.now());
  }

  /** 404 for a voice the account does not own, as for one that does not exist. */
  delete(accountId: string, id: string): ClonedVoice {
    const voice = deleteClonedVoice(this.db, accountId, id);
    if (!voice) throw new NotFoundError(`The voice "${id}" does not exist. GET /audio/voices lists your cloned voices.`);
    this.removeFiles(voice);
    return voice;
  }

  private purgeExpired(): void {
    for (const voice of deleteExpiredClonedVoices(this.db, this.now())) this.removeFiles(voice);
  }

  private removeFiles(voice: ClonedVoice): void {
    rmSync(join(this.dir, voice.sampleFile), { force: true });
    rmSync(join(this.dir, `${voice.id}.bin`), { force: true });
  }
}

export function toVoiceRecord(voice: ClonedVoice): VoiceRecord {
  return {
    id: voice.id,
    object: "voice",
    model: voice.modelId,
    name: voice.name,
    sample_seconds: Math.round(voice.sampleSeconds * 1000) / 1000,
    created_at: Math.floor(voice.createdAt / 1000),
    expires_at: Math.floor(voice.expiresAt / 1000),
  };
}
