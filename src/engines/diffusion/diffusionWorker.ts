import { serveWorker } from "../worker/serveWorker.js";
import { StableDiffusionPipeline, type DiffusionPipelineOptions, type TextToImageOptions, type VideoFramesOptions } from "./StableDiffusionPipeline.js";

/**
 * Worker-thread side of the ONNX diffusion engine: loads the pipeline once, then runs image
 * and video tasks, reporting progress (and video frames, as they are decoded) as events.
 */

export interface DiffusionWorkerData {
  dir: string;
  options: DiffusionPipelineOptions;
}

export type DiffusionTask = { type: "image"; options: Omit<TextToImageOptions, "seed">; seeds: number[] } | { type: "video"; options: VideoFramesOptions };

export type DiffusionEvent = { type: "progress"; done: number; total: number } | { type: "frame"; index: number; rgb: Uint8Array };

export interface DiffusionImageResult {
  images: { rgb: Uint8Array; width: number; height: number; nsfw: boolean | null; seed: number }[];
  preprocessMs: number;
  inferenceMs: number;
}

const PROGRESS_INTERVAL_MS = 100;

serveWorker<StableDiffusionPipeline, DiffusionTask>({
  async load(data) {
    const { dir, options } = data as DiffusionWorkerData;
    const pipeline = await StableDiffusionPipeline.load(dir, options);
    return { context: pipeline, info: pipeline.info };
  },

  async run(pipeline, task, io) {
    let lastProgress = 0;
    const progress = (done: number, total: number) => {
      const now = performance.now();
      if (done < total && now - lastProgress < PROGRESS_INTERVAL_MS) return;
      lastProgress = now;
      io.emit({ type: "progress", done, total } satisfies DiffusionEvent);
    };
    if (task.type === "image") {
      const result: DiffusionImageResult = { images: [], preprocessMs: 0, inferenceMs: 0 };
      const total = task.seeds.length * task.options.steps;
      for (const [i, seed] of task.seeds.entries()) {
        const image = await pipeline.textToImage({ ...task.options, seed }, { checkpoint: io.checkpoint, onProgress: (done) => progress(i * task.options.steps + done, total) });
        result.images.push({ rgb: image.rgb, width: image.width, height: image.height, nsfw: image.nsfw, seed });
        result.preprocessMs += image.timing.preprocessMs;
        result.inferenceMs += image.timing.inferenceMs;
      }
      return { result, transfer: result.images.map((image) => image.rgb.buffer as ArrayBuffer) };
    }
    await pipeline.generateFrames(task.options, (rgb, index) => io.emit({ type: "frame", index, rgb } satisfies DiffusionEvent, [rgb.buffer as ArrayBuffer]), {
      checkpoint: io.checkpoint,
      onProgress: progress,
    });
    return { result: { frames: task.options.frames } };
  },
});
