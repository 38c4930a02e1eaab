import type { ModelEntry } from "../../config/modelRegistry.js";
import type { ExecutionProviderChoice } from "../onnx/resolveExecutionProviders.js";
import type { TranscribeOptions, TranscriptionEngine, TranscriptionResult, TranscriptionSegment } from "../types.js";
import { siblingModule } from "../worker/siblingModule.js";
import { TaskAbortedError, WorkerPool } from "../worker/WorkerPool.js";
import { WHISPER_SAMPLE_RATE } from "./whisperSampleRate.js";
import type { WhisperTask, WhisperWorkerData, WhisperWorkerInfo } from "./whisperWorker.js";

const WORKER = siblingModule(import.meta.url, "whisperWorker");

/**
 * Whisper on a worker thread of its own (WhisperEngine runs there whole). onnxruntime-node
 * runs inferences synchronously on the calling thread, and a transcription is seconds of them:
 * the encoder once per 30 s window, then a decoder step per token, the first of which projects
 * the whole encoder output into the cross-attention cache. Here none of it touches the event
 * loop that serves chat streams and every other request; segments arrive as they are decoded.
 */
export class WhisperWorkerEngine implements TranscriptionEngine {
  readonly kind = "transcription";
  readonly sampleRate = WHISPER_SAMPLE_RATE;
  readonly router = "whisper (transformers.js automatic-speech-recognition, worker thread)";
  readonly supportsWordTimestamps: boolean;
  readonly supportsTranslation: boolean;
  readonly executionProvider: ExecutionProviderChoice;

  private constructor(private readonly pool: WorkerPool) {
    const info = pool.info as WhisperWorkerInfo;
    this.supportsWordTimestamps = info.supportsWordTimestamps;
    this.supportsTranslation = info.supportsTranslation;
    this.executionProvider = info.executionProvider;
  }

  static async load(entry: ModelEntry, gpu: "auto" | false): Promise<WhisperWorkerEngine> {
    const data: WhisperWorkerData = { entry, gpu };
    return new WhisperWorkerEngine(await WorkerPool.start({ name: entry.id, entry: WORKER, data, size: 1, maxWaiting: entry.queue.maxWaiting }));
  }

  async transcribe(options: TranscribeOptions): Promise<TranscriptionResult> {
    const { onSegment, signal, ...rest } = options;
    const task: WhisperTask = rest;
    try {
      const { result } = await this.pool.run<TranscriptionResult>(task, { signal, onEvent: (segment) => onSegment?.(segment as TranscriptionSegment) });
      return result;
    } catch (error) {
      // As in one thread: a cancelled transcription fails with its signal's reason.
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
