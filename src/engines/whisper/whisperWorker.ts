import type { TranscribeOptions } from "../types.js";
import type { EngineWorkerData } from "../worker/EngineOnWorker.js";
import { serveWorker } from "../worker/serveWorker.js";
import { WhisperEngine } from "./WhisperEngine.js";

/**
 * Worker-thread side of WhisperWorkerEngine: the whole Whisper pipeline (log-mel features,
 * encoder, the decoder's loop with its key/value cache, word alignment) runs here, so no part
 * of a transcription holds the main thread's event loop, and the cache never crosses threads.
 */

/** A transcription as it crosses to the worker: the options without their callback and signal. */
export type WhisperTask = Omit<TranscribeOptions, "onSegment" | "signal" | "audio"> & { audio: Float32Array };

export interface WhisperWorkerInfo {
  supportsWordTimestamps: boolean;
  supportsTranslation: boolean;
  executionProvider: WhisperEngine["executionProvider"];
}

serveWorker<WhisperEngine, WhisperTask>({
  async load(data) {
    const { entry, gpu } = data as EngineWorkerData;
    const engine = await WhisperEngine.load(entry, gpu);
    const info: WhisperWorkerInfo = {
      supportsWordTimestamps: engine.supportsWordTimestamps,
      supportsTranslation: engine.supportsTranslation,
      executionProvider: engine.executionProvider,
    };
    return { context: engine, info };
  },

  async run(engine, task, io) {
    // Segments go out as they are decoded: a streamed transcription sends each at once.
    const result = await engine.transcribe({ ...task, onSegment: (segment) => io.emit(segment), signal: io.signal });
    return { result };
  },
});
