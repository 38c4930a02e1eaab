import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { open } from "node:fs/promises";
import { join } from "node:path";
import type { JobHandler } from "../../jobs/JobQueue.js";
import { encodeAudioFile } from "../../media/ffmpeg.js";
import { loopCrossfade } from "../../media/pcm.js";
import type { ModelManager } from "../../models/ModelManager.js";
import type { JobRow } from "../../store/jobs.js";
import type { AudioJobInput, MusicJobInput, SpeechJobInput } from "./AudioJobService.js";
import { type SpeechService, synthesizeAtSpeed } from "./SpeechService.js";
import { PCM_SAMPLE_RATE } from "./schema.js";
import { isSpeakable, splitSentences } from "./splitSentences.js";

type JobContext = Parameters<JobHandler["run"]>[1];

const EXTENSIONS: Record<AudioJobInput["format"], string> = { mp3: "mp3", opus: "ogg", aac: "aac", flac: "flac", wav: "wav", pcm: "pcm" };

/**
 * Runs an audio job into one file written atomically under `dir`: long speech read sentence by
 * sentence, or a music clip generated frame by frame (progress after each). The samples go to
 * a scratch file as they are made and ffmpeg encodes from it into a file that carries its
 * duration, so a job holds one sentence in memory, not hours of audio (100,000 characters of
 * speech held 1.4 GB when kept whole).
 */
export function audioJobHandler(models: ModelManager, speech: SpeechService, dir: string): JobHandler {
  removeScratchFiles(dir);
  return {
    async run(job, context) {
      const input = JSON.parse(job.inputJson) as AudioJobInput;
      mkdirSync(dir, { recursive: true });
      const path = join(dir, `${job.id}.${EXTENSIONS[input.format]}`);
      const samplesPath = `${path}.samples`;
      try {
        const spool = await SampleSpool.create(samplesPath);
        let sampleRate: number;
        try {
          sampleRate = input.kind === "music" ? await playMusic(models, job, input, context, spool) : await readAloud(models, speech, job, input, context, spool);
        } finally {
          await spool.close();
        }
        await encodeAudioFile(samplesPath, sampleRate, input.format, `${path}.partial`, context.signal, input.format === "pcm" ? { outputSampleRate: PCM_SAMPLE_RATE } : {});
        renameSync(`${path}.partial`, path);
      } finally {
        rmSync(samplesPath, { force: true });
        rmSync(`${path}.partial`, { force: true });
      }
      return { path, bytes: statSync(path).size, contentType: input.contentType };
    },
  };
}

/**
 * A process killed in the middle of a job leaves its scratch and partial files behind (a job run
 * again overwrites its own, but one that is not, having failed too often, would keep them). The
 * handler is made at start-up, before any job runs: whatever is there is left over.
 */
function removeScratchFiles(dir: string): void {
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir)) {
    if (name.endsWith(".samples") || name.endsWith(".partial")) rmSync(join(dir, name), { force: true });
  }
}

/** Mono float32 samples appended to a raw file as they are made. */
class SampleSpool {
  private constructor(private readonly file: Awaited<ReturnType<typeof open>>) {}

  static async create(path: string): Promise<SampleSpool> {
    return new SampleSpool(await open(path, "w"));
  }

  async append(samples: Float32Array): Promise<void> {
    await this.file.write(new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength));
  }

  close(): Promise<void> {
    return this.file.close();
  }
}

/**
 * Long speech. The voice is resolved again: a cloned voice deleted or expired since queueing
 * fails the job, which refunds it.
 */
async function readAloud(models: ModelManager, speech: SpeechService, job: JobRow, input: SpeechJobInput, { signal, progress }: JobContext, spool: SampleSpool): Promise<number> {
  const entry = models.get(job.model, "tts");
  const lease = await models.acquire(job.model, "speech");
  try {
    signal.throwIfAborted();
    const engine = lease.engine;
    if (engine.output !== "pcm") throw new Error(`${entry.id} is relayed to another server; audio jobs run on local speech models`);
    const voice = speech.resolveVoice(entry, engine, input.voice, job.accountId ?? undefined);
    const pieces = splitSentences(input.text, entry.speech.maxChunkCharacters).filter(isSpeakable);
    for (const [index, text] of pieces.entries()) {
      signal.throwIfAborted();
      await spool.append(await synthesizeAtSpeed(engine, { text, voice, speed: input.speed, language: input.language, signal }));
      progress(((index + 1) / pieces.length) * 0.95);
    }
    return engine.sampleRate;
  } finally {
    lease.release();
  }
}

/**
 * A music clip of exactly the asked duration. A loop is generated `loopCrossfadeSeconds` longer
 * and that tail is crossfaded into the head, so the file ends where its start continues.
 */
async function playMusic(models: ModelManager, job: JobRow, input: MusicJobInput, { signal, progress }: JobContext, spool: SampleSpool): Promise<number> {
  const entry = models.get(job.model, "music");
  const lease = await models.acquire(job.model, "music");
  try {
    signal.throwIfAborted();
    const engine = lease.engine;
    const overlap = input.loop ? Math.round(entry.music.loopCrossfadeSeconds * engine.sampleRate) : 0;
    const generated = await engine.generate({
      prompt: input.prompt,
      durationSeconds: input.durationSeconds + overlap / engine.sampleRate,
      signal,
      onProgress: (fraction) => progress(fraction * 0.95),
    });
    await spool.append(loopCrossfade(generated, overlap));
    return engine.sampleRate;
  } finally {
    lease.release();
  }
}
