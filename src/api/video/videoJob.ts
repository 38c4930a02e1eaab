import { mkdirSync, renameSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { once } from "node:events";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import type { JobHandler } from "../../jobs/JobQueue.js";
import { encodeVideoStream } from "../../media/ffmpeg.js";
import { decodeImage } from "../../media/image.js";
import type { ModelManager } from "../../models/ModelManager.js";

/** How far toward the prompt an image-to-video job's first frame goes from its picture. */
export const IMAGE_TO_VIDEO_STRENGTH = 0.6;

/** What a queued video job stores (jobs.input_json): everything needed to generate it again after a restart. */
export interface VideoJobInput {
  prompt: string;
  negativePrompt: string;
  seconds: number;
  resolution: string;
  aspectRatio: string;
  width: number;
  height: number;
  fps: number;
  frames: number;
  steps: number;
  cfgScale: number;
  seed: number;
  keyframeInterval: number;
  /** Image-to-video: the first frame's picture (PNG, base64, at the video's size) and how far toward the prompt it goes. */
  initImage?: string;
  initStrength?: number;
}

/**
 * Generates a video job: frames from the model's video engine (worker threads), streamed into
 * ffmpeg as they come (H.264 MP4 at the job's fps), the file written atomically under `dir`.
 */
export function videoJobHandler(models: ModelManager, dir: string): JobHandler {
  return {
    async run(job, { signal, progress }) {
      const input = JSON.parse(job.inputJson) as VideoJobInput;
      const lease = await models.acquire(job.model, "video");
      const { engine } = lease;
      try {
        // Loading can take a while: a shutdown may have come meanwhile.
        signal.throwIfAborted();
        const frameBytes = input.width * input.height * 3;
        const init = input.initImage
          ? { rgb: (await decodeImage(Buffer.from(input.initImage, "base64"))).rgb, strength: input.initStrength ?? IMAGE_TO_VIDEO_STRENGTH }
          : undefined;
        const frames = new PassThrough({ highWaterMark: frameBytes * 4 });
        const stop = new AbortController();
        const encodeSignal = AbortSignal.any([signal, stop.signal]);
        const encoding = encodeVideoStream(frames, input.width, input.height, input.fps, encodeSignal);
        // If ffmpeg dies, stop generating instead of waiting on a pipe nobody reads.
        encoding.catch((error: unknown) => stop.abort(error));
        try {
          await engine.generateFrames({
            prompt: input.prompt,
            negativePrompt: input.negativePrompt,
            width: input.width,
            height: input.height,
            steps: input.steps,
            cfgScale: input.cfgScale,
            seed: input.seed,
            frames: input.frames,
            keyframeInterval: input.keyframeInterval,
            init,
            signal: encodeSignal,
            onFrame: async (rgb) => {
              if (!frames.write(Buffer.from(rgb.buffer, rgb.byteOffset, rgb.byteLength))) await once(frames, "drain", { signal: encodeSignal });
            },
            onProgress: (fraction) => progress(fraction * 0.98),
          });
          frames.end();
        } catch (error) {
          stop.abort(error);
          // An input stream error kills ffmpeg (media/ffmpegProcess.ts; a plain destroy would leave it waiting on stdin).
          frames.destroy(new Error("frame generation stopped"));
          await encoding.catch(() => undefined);
          throw signal.aborted ? signal.reason : error;
        }
        const mp4 = await encoding;
        mkdirSync(dir, { recursive: true });
        const path = join(dir, `${job.id}.mp4`);
        // Asynchronously: a long video is megabytes, and the job runs on the node's event loop.
        await writeFile(`${path}.partial`, mp4);
        renameSync(`${path}.partial`, path);
        return { path, bytes: mp4.length, contentType: "video/mp4" };
      } finally {
        lease.release();
      }
    },
  };
}
