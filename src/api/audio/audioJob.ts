import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { JobHandler } from "../../jobs/JobQueue.js";
import { concatSamples, loopCrossfade } from "../../media/pcm.js";
import type { ModelManager } from "../../models/ModelManager.js";
import type { JobRow } from "../../store/jobs.js";
import type { AudioJobInput, MusicJobInput, SpeechJobInput } from "./AudioJobService.js";
import { encodeWhole, type SpeechService, synthesizeAtSpeed } from "./SpeechService.js";
import { isSpeakable, splitSentences } from "./splitSentences.js";

type JobContext = Parameters<JobHandler["run"]>[1];

const EXTENSIONS: Record<AudioJobInput["format"], string> = { mp3: "mp3", opus: "ogg", aac: "aac", flac: "flac", wav: "wav", pcm: "pcm" };

/**
 * Runs an audio job into one file written atomically under `dir`, encoded as /audio/speech
 * encodes whole files (so FLAC and the others carry their duration): long speech read sentence
 * by sentence, or a music clip generated frame by frame (progress after each).
 */
export function audioJobHandler(models: ModelManager, speech: SpeechService, dir: string): JobHandler {
  return {
    async run(job, context) {
      const input = JSON.parse(job.inputJson) as AudioJobInput;
      const { samples, sampleRate } = input.kind === "music" ? await playMusic(models, job, input, context) : await readAloud(models, speech, job, input, context);
      const audio = await encodeWhole(samples, sampleRate, input.format, context.signal);
      mkdirSync(dir, { recursive: true });
      const path = join(dir, `${job.id}.${EXTENSIONS[input.format]}`);
      writeFileSync(`${path}.partial`, audio);
      renameSync(`${path}.partial`, path);
      return { path, bytes: audio.length, contentType: input.contentType };
    },
  };
}

/**
 * Long speech. The voice is resolved again: a cloned voice deleted or expired since queueing
 * fails the job, which refunds it.
 */
async function readAloud(models: ModelManager, speech: SpeechService, job: JobRow, input: SpeechJobInput, { signal, progress }: JobContext) {
  const entry = models.get(job.model, "tts");
  const lease = await models.acquire(job.model, "speech");
  try {
    signal.throwIfAborted();
    const engine = lease.engine;
    if (engine.output !== "pcm") throw new Error(`${entry.id} is relayed to another server; audio jobs run on local speech models`);
    const voice = speech.resolveVoice(entry, engine, input.voice, job.accountId ?? undefined);
    const pieces = splitSentences(input.text, entry.speech.maxChunkCharacters).filter(isSpeakable);
    const parts: Float32Array[] = [];
    for (const [index, text] of pieces.entries()) {
      signal.throwIfAborted();
      parts.push(await synthesizeAtSpeed(engine, { text, voice, speed: input.speed, language: input.language, signal }));
      progress(((index + 1) / pieces.length) * 0.95);
    }
    return { samples: concatSamples(parts), sampleRate: engine.sampleRate };
  } finally {
    lease.release();
  }
}

/**
 * A music clip of exactly the asked duration. A loop is generated `loopCrossfadeSeconds` longer
 * and that tail is crossfaded into the head, so the file ends where its start continues.
 */
async function playMusic(models: ModelManager, job: JobRow, input: MusicJobInput, { signal, progress }: JobContext) {
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
    return { samples: loopCrossfade(generated, overlap), sampleRate: engine.sampleRate };
  } finally {
    lease.release();
  }
}
