import type { LlamaEmbeddingContext, LlamaModel, Token } from "node-llama-cpp";
import type { ModelEntry } from "../../config/modelRegistry.js";
import { CooperativeSlicer } from "../cooperativeWork.js";
import { normalize } from "../embeddingMath.js";
import type { EmbeddingEngine, EmbedResult, MemoryEstimate } from "../types.js";
import { contextThreads, getSharedLlama, skipsMemorySafetyChecks } from "./getSharedLlama.js";
import { llamaMemoryInUse } from "./llamaMemoryInUse.js";
import { longestTokenBytes } from "./longestTokenBytes.js";
import { TokenizationCache } from "./TokenizationCache.js";

/**
 * GGUF embedding models through node-llama-cpp. Pooling is the model's own (its
 * `<arch>.pooling_type` metadata, applied by llama.cpp). node-llama-cpp 3.22 reads one pooled
 * vector per context evaluation (sequence 0), so a batch is spread over
 * `embedding.parallel` contexts that evaluate concurrently, not one input after another.
 */
export class LlamaEmbeddingEngine implements EmbeddingEngine {
  readonly kind = "embedding" as const;
  readonly router: string;

  private constructor(
    private readonly model: LlamaModel,
    file: string,
    private readonly contexts: LlamaEmbeddingContext[],
    readonly dimensions: number,
    readonly maxInputTokens: number,
    private readonly normalizeVectors: boolean,
    gpu: string | false,
    longestBytes: number | undefined,
  ) {
    this.router = `llama.cpp/${gpu || "cpu"}`;
    this.maxInputChars = longestBytes === undefined ? undefined : maxInputTokens * longestBytes;
    // Inputs seldom repeat: nothing is kept, but long ones are cut after user-defined tokens.
    this.tokenization = new TokenizationCache(model.tokenizer, { minChars: Number.POSITIVE_INFINITY });
    this.tokenization.allowVocabularyCuts(model, file, ["plain"]);
  }

  private readonly tokenization: TokenizationCache;

  /** An input's tokens as the model reads it (plain text), before the context adds its own (BOS, EOS). */
  private tokensOf(text: string): Token[] {
    return this.tokenization.tokenizeRaw(text, false);
  }

  readonly maxInputChars: number | undefined;

  static async load(entry: ModelEntry, gpu: "auto" | false): Promise<LlamaEmbeddingEngine> {
    if (entry.embedding.pooling !== "auto") {
      throw new Error(`embedding.pooling is read from the GGUF (<arch>.pooling_type) for llama models; remove the "${entry.embedding.pooling}" setting`);
    }
    const llama = await getSharedLlama(gpu);
    const ignoreMemorySafetyChecks = skipsMemorySafetyChecks(llama);
    const model = await llama.loadModel({ modelPath: entry.file!, gpuLayers: entry.llama.gpuLayers, ignoreMemorySafetyChecks });
    try {
      // node-llama-cpp needs the context longer than the input: the training context holds inputs one token shorter.
      const maxInputTokens = entry.embedding.maxInputTokens ?? Math.min(model.trainContextSize, 8192) - 1;
      const createContexts = async () => {
        const contexts: LlamaEmbeddingContext[] = [];
        for (let i = 0; i < entry.embedding.parallel; i++) {
          contexts.push(
            await model.createEmbeddingContext({
              // One more than the input limit: the context must be longer than any input.
              contextSize: maxInputTokens + 1,
              batchSize: maxInputTokens + 1,
              threads: contextThreads(entry.embedding.threads),
              ignoreMemorySafetyChecks,
            }),
          );
        }
        return contexts;
      };
      // The vocabulary is read on this thread while llama.cpp creates the contexts on another.
      const [contexts, longestBytes] = await Promise.all([createContexts(), longestTokenBytes(model)]);
      const probe = await contexts[0]!.getEmbeddingFor("hello");
      return new LlamaEmbeddingEngine(model, entry.file!, contexts, probe.vector.length, maxInputTokens, entry.embedding.normalize, llama.gpu, longestBytes);
    } catch (error) {
      await model.dispose();
      throw error;
    }
  }

  /** Input by input, the event loop free between them. */
  async countTokens(texts: readonly string[]): Promise<number[]> {
    const slicer = new CooperativeSlicer();
    const counts: number[] = [];
    for (const text of texts) {
      counts.push(this.contexts[0]!.calculateInputLength(this.tokensOf(text)));
      await slicer.pause();
    }
    return counts;
  }

  async embed(texts: readonly string[], options: { signal?: AbortSignal } = {}): Promise<EmbedResult> {
    const vectors: Float32Array[] = new Array(texts.length);
    // Counted as each input is read, not all at once at the end: 2,048 inputs of 360 tokens held the event loop 0.2 s that way.
    const tokens: number[] = new Array(texts.length);
    let next = 0;
    await Promise.all(
      this.contexts.map(async (context) => {
        while (next < texts.length) {
          options.signal?.throwIfAborted();
          const index = next++;
          const input = this.tokensOf(texts[index]!);
          tokens[index] = context.calculateInputLength(input);
          const { vector } = await context.getEmbeddingFor(input);
          const v = Float32Array.from(vector);
          vectors[index] = this.normalizeVectors ? normalize(v) : v;
        }
      }),
    );
    return { vectors, tokens };
  }

  memoryInUse(): MemoryEstimate {
    return llamaMemoryInUse(this.model, this.contexts);
  }

  async dispose(): Promise<void> {
    await Promise.all(this.contexts.map((c) => c.dispose()));
    await this.model.dispose();
  }
}
