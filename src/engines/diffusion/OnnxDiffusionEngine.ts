import type { ModelEntry } from "../../config/modelRegistry.js";
import { resolveExecutionProviders, type ExecutionProviderChoice } from "../onnx/resolveExecutionProviders.js";
import type { ImageEngine, ImageGenerateOptions, ImageGenerateResult, VideoEngine, VideoGenerateOptions } from "../types.js";
import { TaskAbortedError, WorkerPool } from "../worker/WorkerPool.js";
import type { DiffusionEvent, DiffusionImageResult, DiffusionTask, DiffusionWorkerData } from "./diffusionWorker.js";
import type { PipelineInfo } from "./StableDiffusionPipeline.js";
import { siblingModule } from "../worker/siblingModule.js";

const WORKER = siblingModule(import.meta.url, "diffusionWorker");

export { TaskAbortedError };

/**
 * Image and video engines over a pool of worker threads running the ONNX Stable Diffusion
 * pipeline (image.workers threads, each with its own sessions). The event loop only queues
 * tasks and receives pixels; encoding (sharp, ffmpeg) happens in the services.
 */
export interface DiffusionPool {
  pool: WorkerPool;
  info: PipelineInfo;
  executionProvider: ExecutionProviderChoice;
}

export async function startDiffusionPool(entry: ModelEntry, gpu: "auto" | false): Promise<DiffusionPool> {
  const settings = entry.image;
  // Decided here, once for the pool: every worker opens its sessions on the result.
  const placement = await resolveExecutionProviders(settings.executionProviders, { gpu });
  const data: DiffusionWorkerData = {
    dir: entry.file!,
    options: {
      threads: settings.threads,
      executionProviders: placement.providers,
      sampler: settings.scheduler,
      safetyChecker: settings.safetyChecker,
    },
  };
  const pool = await WorkerPool.start({ name: entry.id, entry: WORKER, data, size: settings.workers, maxWaiting: entry.queue.maxWaiting });
  return { pool, info: pool.info as PipelineInfo, executionProvider: placement };
}

/** What the image and video engines share: one worker pool running the pipeline of one model. */
abstract class DiffusionPoolEngine {
  readonly router: string;

  readonly executionProvider: ExecutionProviderChoice;
  protected readonly pool: WorkerPool;
  readonly info: PipelineInfo;

  protected constructor(shared: DiffusionPool) {
    this.pool = shared.pool;
    this.info = shared.info;
    this.executionProvider = shared.executionProvider;
    this.router = `onnxruntime/${shared.executionProvider.name}`;
  }

  stats() {
    return this.pool.stats();
  }

  dispose(): Promise<void> {
    return this.pool.dispose();
  }
}

export class OnnxImageEngine extends DiffusionPoolEngine implements ImageEngine {
  readonly kind = "image" as const;

  static async load(entry: ModelEntry, gpu: "auto" | false): Promise<OnnxImageEngine> {
    return new OnnxImageEngine(await startDiffusionPool(entry, gpu));
  }

  /** An image engine over a pool another engine (a video model on the same files) may share; the pool's owner disposes it. */
  static over(shared: DiffusionPool): OnnxImageEngine {
    return new OnnxImageEngine(shared);
  }

  get safetyChecker(): boolean {
    return this.info.safetyChecker;
  }

  get imageToImage(): boolean {
    return this.info.imageToImage;
  }

  async generate(options: ImageGenerateOptions): Promise<ImageGenerateResult> {
    const task: DiffusionTask = {
      type: "image",
      options: {
        prompt: options.prompt,
        negativePrompt: options.negativePrompt,
        width: options.width,
        height: options.height,
        steps: options.steps,
        cfgScale: options.cfgScale,
        safetyCheck: options.safetyCheck,
        init: options.init,
      },
      seeds: Array.from({ length: options.variants }, (_, i) => options.seed + i),
    };
    const { result, queueMs } = await this.pool.run<DiffusionImageResult>(task, { signal: options.signal });
    return {
      images: result.images.map((image) => ({ rgb: image.rgb, width: image.width, height: image.height, seed: image.seed, flagged: image.nsfw })),
      queueMs,
      preprocessMs: result.preprocessMs,
      inferenceMs: result.inferenceMs,
    };
  }
}

export class OnnxVideoEngine extends DiffusionPoolEngine implements VideoEngine {
  readonly kind = "video" as const;

  static async load(entry: ModelEntry, gpu: "auto" | false): Promise<OnnxVideoEngine> {
    return new OnnxVideoEngine(await startDiffusionPool(entry, gpu));
  }

  static over(shared: DiffusionPool): OnnxVideoEngine {
    return new OnnxVideoEngine(shared);
  }

  async generateFrames(options: VideoGenerateOptions): Promise<void> {
    const task: DiffusionTask = {
      type: "video",
      options: {
        prompt: options.prompt,
        negativePrompt: options.negativePrompt,
        width: options.width,
        height: options.height,
        steps: options.steps,
        cfgScale: options.cfgScale,
        seed: options.seed,
        frames: options.frames,
        keyframeInterval: options.keyframeInterval,
        init: options.init,
      },
    };
    // Frames arrive in order; each is handed on before the next is taken, so a slow consumer
    // (ffmpeg) never sees them out of order.
    let chain = Promise.resolve();
    let failure: unknown;
    await this.pool.run(task, {
      signal: options.signal,
      onEvent: (raw) => {
        const event = raw as DiffusionEvent;
        if (event.type === "progress") options.onProgress?.(event.done / event.total);
        else
          chain = chain
            .then(async () => {
              if (failure === undefined) await options.onFrame(event.rgb, event.index);
            })
            .catch((error: unknown) => {
              failure ??= error;
            });
      },
    });
    await chain;
    if (failure !== undefined) throw failure;
  }
}
