import type { MusicOptions } from "../types.js";
import type { EngineWorkerData } from "../worker/EngineOnWorker.js";
import { serveWorker } from "../worker/serveWorker.js";
import { TransformersMusicEngine } from "./MusicEngine.js";

/**
 * Worker-thread side of MusicWorkerEngine: MusicGen's whole generation (text encoder, one
 * decoder step per 20 ms frame with its key/value cache, EnCodec's decoder) runs here, so a
 * clip's minutes of decoder steps never hold the event loop that serves chat streams.
 */

/** A clip as it crosses to the worker: the options without their callback and signal. */
export type MusicTask = Omit<MusicOptions, "onProgress" | "signal">;

export interface MusicWorkerInfo {
  sampleRate: number;
  frameRate: number;
  executionProvider: TransformersMusicEngine["executionProvider"];
}

serveWorker<TransformersMusicEngine, MusicTask>({
  async load(data) {
    const { entry, gpu } = data as EngineWorkerData;
    const engine = await TransformersMusicEngine.load(entry, gpu);
    const info: MusicWorkerInfo = { sampleRate: engine.sampleRate, frameRate: engine.frameRate, executionProvider: engine.executionProvider };
    return { context: engine, info };
  },

  async run(engine, task, io) {
    // Progress at most once a percent: a clip is hundreds of steps, the caller only shows it.
    let reported = -1;
    const samples = await engine.generate({
      ...task,
      signal: io.signal,
      onProgress: (fraction) => {
        const percent = Math.floor(fraction * 100);
        if (percent === reported) return;
        reported = percent;
        io.emit(fraction);
      },
    });
    return { result: samples, transfer: [samples.buffer as ArrayBuffer] };
  },
});
