import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { JobHandler } from "../../jobs/JobQueue.js";
import { concatSamples } from "../../media/pcm.js";
import type { ModelManager } from "../../models/ModelManager.js";
import type { AudioJobInput } from "./AudioJobService.js";
import { encodeWhole, type SpeechService, synthesizeAtSpeed } from "./SpeechService.js";
import { isSpeakable, splitSentences } from "./splitSentences.js";

const EXTENSIONS: Record<AudioJobInput["format"], string> = { mp3: "mp3", opus: "ogg", aac: "aac", flac: "flac", wav: "wav", pcm: "pcm" };

/**
 * Reads an audio job's text with its speech model, sentence by sentence (progress after each),
 * into one file written atomically under `dir`. The voice is resolved again: a cloned voice
 * deleted or expired since queueing fails the job, which refunds it.
 */
export function audioJobHandler(models: ModelManager, speech: SpeechService, dir: string): JobHandler {
  return {
    async run(job, { signal, progress }) {
      const input = JSON.parse(job.inputJson) as AudioJobInput;
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
        const audio = await encodeWhole(concatSamples(parts), engine.sampleRate, input.format, signal);
        mkdirSync(dir, { recursive: true });
        const path = join(dir, `${job.id}.${EXTENSIONS[input.format]}`);
        writeFileSync(`${path}.partial`, audio);
        renameSync(`${path}.partial`, path);
        return { path, bytes: audio.length, contentType: input.contentType };
      } finally {
        lease.release();
      }
    },
  };
}
