import type { ModelEntry } from "../../config/modelRegistry.js";
import type { ExecutionProviderChoice } from "../onnx/resolveExecutionProviders.js";
import type { TranscribeOptions, TranscriptionEngine, TranscriptionResult, TranscriptionSegment } from "../types.js";
import { EngineOnWorker, startEngineWorker } from "../worker/EngineOnWorker.js";
import { siblingModule } from "../worker/siblingModule.js";
import type { WorkerPool } from "../worker/WorkerPool.js";
import type { WhisperTask, WhisperWorkerInfo } from "./whisperWorker.js";
import { WHISPER_SAMPLE_RATE } from "./whisperSampleRate.js";

const WORKER = siblingModule(import.meta.url, "whisperWorker");

/**
 * Whisper on a worker thread of its own (WhisperEngine runs there whole). onnxruntime-node
 * runs inferences synchronously on the calling thread, and a transcription is seconds of them:
 * the encoder once per 30 s window, then a decoder step per token, the first of which projects
 * the whole encoder output into the cross-attention cache. Here none of it touches the event
 * loop that serves chat streams and every other request; segments arrive as they are decoded.
 */
export class WhisperWorkerEngine extends EngineOnWorker implements TranscriptionEngine {
  readonly kind = "transcription";
  readonly sampleRate = WHISPER_SAMPLE_RATE;
  readonly router = "whisper (transformers.js automatic-speech-recognition, worker thread)";
  readonly supportsWordTimestamps: boolean;
  readonly supportsTranslation: boolean;
  readonly executionProvider: ExecutionProviderChoice;

  private constructor(pool: WorkerPool) {
    super(pool);
    ({
      supportsWordTimestamps: this.supportsWordTimestamps,
      supportsTranslation: this.supportsTranslation,
      executionProvider: this.executionProvider,
    } = pool.info as WhisperWorkerInfo);
  }

  static async load(entry: ModelEntry, gpu: "auto" | false): Promise<WhisperWorkerEngine> {
    return new WhisperWorkerEngine(await startEngineWorker(WORKER, entry, gpu));
  }

  transcribe(options: TranscribeOptions): Promise<TranscriptionResult> {
    const { onSegment, signal, audio, ...rest } = options;
    const onEvent = (segment: unknown) => onSegment?.(segment as TranscriptionSegment);
    if (typeof audio !== "function") return this.runTask<TranscriptionResult>({ ...rest, audio } satisfies WhisperTask, signal, onEvent);
    return this.runTaskWhenFree<TranscriptionResult>(
      async () => {
        const samples = await audio();
        const task: WhisperTask = { ...rest, audio: samples };
        // Samples made for this task alone move to the worker instead of being copied there.
        const ownsBuffer = samples.byteOffset === 0 && samples.byteLength === samples.buffer.byteLength && samples.buffer instanceof ArrayBuffer;
        return { payload: task, transfer: ownsBuffer ? [samples.buffer as ArrayBuffer] : [] };
      },
      signal,
      onEvent,
    );
  }
}
