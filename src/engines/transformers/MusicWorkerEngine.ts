import type { ModelEntry } from "../../config/modelRegistry.js";
import type { ExecutionProviderChoice } from "../onnx/resolveExecutionProviders.js";
import type { MusicEngine, MusicOptions } from "../types.js";
import { siblingModule } from "../worker/siblingModule.js";
import { TaskAbortedError, WorkerPool } from "../worker/WorkerPool.js";
import type { MusicTask, MusicWorkerData, MusicWorkerInfo } from "./musicWorker.js";

const WORKER = siblingModule(import.meta.url, "musicWorker");

/**
 * MusicGen on a worker thread of its own (TransformersMusicEngine runs there whole). A clip is
 * one decoder step per 20 ms frame, each a synchronous onnxruntime run: in the main thread they
 * would pause every chat stream for a step's time, hundreds of times per clip.
 */
export class MusicWorkerEngine implements MusicEngine {
  readonly kind = "music";
  readonly router = "musicgen (transformers.js text-to-audio, worker thread)";
  readonly sampleRate: number;
  readonly frameRate: number;
  readonly executionProvider: ExecutionProviderChoice;

  private constructor(private readonly pool: WorkerPool) {
    const info = pool.info as MusicWorkerInfo;
    this.sampleRate = info.sampleRate;
    this.frameRate = info.frameRate;
    this.executionProvider = info.executionProvider;
  }

  static async load(entry: ModelEntry, gpu: "auto" | false): Promise<MusicWorkerEngine> {
    const data: MusicWorkerData = { entry, gpu };
    return new MusicWorkerEngine(await WorkerPool.start({ name: entry.id, entry: WORKER, data, size: 1, maxWaiting: entry.queue.maxWaiting }));
  }

  async generate(options: MusicOptions): Promise<Float32Array> {
    const { onProgress, signal, ...rest } = options;
    const task: MusicTask = rest;
    try {
      const { result } = await this.pool.run<Float32Array>(task, { signal, onEvent: (fraction) => onProgress?.(fraction as number) });
      return result;
    } catch (error) {
      // As in one thread: a cancelled clip fails with its signal's reason.
      if (error instanceof TaskAbortedError && signal?.aborted) throw signal.reason;
      throw error;
    }
  }

  stats(): { busy: number; waiting: number } {
    const { busy, waiting } = this.pool.stats();
    return { busy, waiting };
  }

  dispose(): Promise<void> {
    return this.pool.dispose();
  }
}
