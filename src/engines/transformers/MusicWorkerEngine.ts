import type { ModelEntry } from "../../config/modelRegistry.js";
import type { ExecutionProviderChoice } from "../onnx/resolveExecutionProviders.js";
import type { MusicEngine, MusicOptions } from "../types.js";
import { EngineOnWorker, startEngineWorker } from "../worker/EngineOnWorker.js";
import { siblingModule } from "../worker/siblingModule.js";
import type { WorkerPool } from "../worker/WorkerPool.js";
import type { MusicTask, MusicWorkerInfo } from "./musicWorker.js";

const WORKER = siblingModule(import.meta.url, "musicWorker");

/**
 * MusicGen on a worker thread of its own (TransformersMusicEngine runs there whole). A clip is
 * one decoder step per 20 ms frame, each a synchronous onnxruntime run: in the main thread they
 * would pause every chat stream for a step's time, hundreds of times per clip.
 */
export class MusicWorkerEngine extends EngineOnWorker implements MusicEngine {
  readonly kind = "music";
  readonly router = "musicgen (transformers.js text-to-audio, worker thread)";
  readonly sampleRate: number;
  readonly frameRate: number;
  readonly executionProvider: ExecutionProviderChoice;

  private constructor(pool: WorkerPool) {
    super(pool);
    ({ sampleRate: this.sampleRate, frameRate: this.frameRate, executionProvider: this.executionProvider } = pool.info as MusicWorkerInfo);
  }

  static async load(entry: ModelEntry, gpu: "auto" | false): Promise<MusicWorkerEngine> {
    return new MusicWorkerEngine(await startEngineWorker(WORKER, entry, gpu));
  }

  generate(options: MusicOptions): Promise<Float32Array> {
    const { onProgress, signal, ...task } = options;
    return this.runTask<Float32Array>(task satisfies MusicTask, signal, (fraction) => onProgress?.(fraction as number));
  }
}
