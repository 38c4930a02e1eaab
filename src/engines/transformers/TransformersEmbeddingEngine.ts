import { AutoTokenizer, env, type PreTrainedTokenizer } from "@huggingface/transformers";
import type { ModelEntry } from "../../config/modelRegistry.js";
import type { EmbeddingEngine, EmbedResult } from "../types.js";
import { WorkerPool } from "../worker/WorkerPool.js";
import { resolveExecutionProviders, type ExecutionProviderChoice } from "../onnx/resolveExecutionProviders.js";
import { chunksAtWhitespace, CooperativeSlicer } from "../cooperativeWork.js";
import type { EmbeddingTask, EmbeddingWorkerData, EmbeddingWorkerResult } from "./embeddingWorker.js";
import { inputLimit, poolingOf } from "./modelConfig.js";
import { siblingModule } from "../worker/siblingModule.js";

/** Characters tokenized in one go: a few milliseconds of work. */
const COUNT_CHUNK_CHARS = 4096;

const WORKER = siblingModule(import.meta.url, "embeddingWorker");

/**
 * ONNX encoder models (BERT, E5, BGE... in the transformers.js / Optimum layout) through
 * transformers.js in a worker thread. Inputs of a request run in batches of
 * embedding.batchSize through one forward pass each; token counts come from the same
 * tokenizer on the main thread, before anything runs, so the credit hold is exact.
 */
export class TransformersEmbeddingEngine implements EmbeddingEngine {
  readonly kind = "embedding" as const;
  readonly router = "transformers.js/onnxruntime";

  private constructor(
    private readonly pool: WorkerPool,
    private readonly tokenizer: PreTrainedTokenizer,
    readonly dimensions: number,
    readonly maxInputTokens: number,
    readonly executionProvider: ExecutionProviderChoice,
  ) {}

  static async load(entry: ModelEntry, gpu: "auto" | false): Promise<TransformersEmbeddingEngine> {
    const dir = entry.file!;
    const settings = entry.embedding;
    env.allowRemoteModels = false;
    const maxInputTokens = inputLimit(dir, settings.maxInputTokens);
    // Decided here, once: the worker only opens sessions on the result.
    const placement = await resolveExecutionProviders(settings.executionProviders, { gpu });
    const data: EmbeddingWorkerData = {
      dir,
      dtype: settings.dtype,
      threads: settings.threads,
      executionProviders: placement.providers,
      pooling: poolingOf(dir, settings.pooling),
      normalize: settings.normalize,
      maxInputTokens,
      batchSize: settings.batchSize,
    };
    const tokenizer = await AutoTokenizer.from_pretrained(dir, { local_files_only: true });
    const pool = await WorkerPool.start({ name: entry.id, entry: WORKER, data, size: 1, maxWaiting: entry.queue.maxWaiting });
    return new TransformersEmbeddingEngine(pool, tokenizer, (pool.info as { dimensions: number }).dimensions, maxInputTokens, placement);
  }

  /**
   * Encoder tokenizers (WordPiece, Unigram) may drop characters or make one token of a whole
   * unknown word, so no character bound is sound for them. A long input is counted instead in
   * chunks cut at whitespace (where their pre-tokenizers split words anyway, so the chunks'
   * tokens are the whole text's), the event loop free between chunks, stopping once the count
   * passes `stopAbove`: a 10 MB input costs a few chunks, not a 15 s stall.
   */
  async countTokens(texts: readonly string[], options: { stopAbove?: number } = {}): Promise<number[]> {
    const stopAbove = options.stopAbove ?? Number.POSITIVE_INFINITY;
    const slicer = new CooperativeSlicer();
    const counts: number[] = [];
    for (const text of texts) {
      if (text.length <= COUNT_CHUNK_CHARS) counts.push(this.count(text));
      else {
        // Each call adds the special tokens ([CLS], [SEP]...) once: the whole text has them once.
        const specials = this.count("");
        let total = specials;
        for (const chunk of chunksAtWhitespace(text, COUNT_CHUNK_CHARS)) {
          total += this.count(chunk) - specials;
          if (total > stopAbove) break;
          await slicer.pause();
        }
        counts.push(total);
      }
      await slicer.pause();
    }
    return counts;
  }

  private count(text: string): number {
    return (this.tokenizer(text, { truncation: false }).input_ids as { dims: number[] }).dims.at(-1) ?? 0;
  }

  async embed(texts: readonly string[], options: { signal?: AbortSignal } = {}): Promise<EmbedResult> {
    const task: EmbeddingTask = { texts: [...texts] };
    const { result } = await this.pool.run<EmbeddingWorkerResult>(task, { signal: options.signal });
    return result;
  }

  dispose(): Promise<void> {
    return this.pool.dispose();
  }
}
