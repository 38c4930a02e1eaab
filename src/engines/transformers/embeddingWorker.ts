import { AutoModel, AutoTokenizer, env, type PreTrainedModel, type PreTrainedTokenizer, type Tensor } from "@huggingface/transformers";
import { normalize, pool, type Pooling } from "../embeddingMath.js";
import { serveWorker } from "../worker/serveWorker.js";
import { transformersDeviceOptions } from "./transformersDeviceOptions.js";

/**
 * Worker-thread side of the transformers.js embedding engine: the tokenizer and the ONNX
 * encoder loaded from a local directory (never the hub), then batches of inputs through one
 * forward pass each, pooled and normalised.
 */

export interface EmbeddingWorkerData {
  dir: string;
  dtype: string;
  threads: number;
  /** Resolved on the main thread (resolveExecutionProviders). */
  executionProviders: string[];
  pooling: Pooling;
  normalize: boolean;
  maxInputTokens: number;
  batchSize: number;
}

export interface EmbeddingTask {
  texts: string[];
}

export interface EmbeddingWorkerResult {
  vectors: Float32Array[];
  tokens: number[];
}

interface Loaded {
  settings: EmbeddingWorkerData;
  tokenizer: PreTrainedTokenizer;
  model: PreTrainedModel;
}

async function embedBatch({ settings, tokenizer, model }: Loaded, texts: string[]): Promise<EmbeddingWorkerResult> {
  const inputs = tokenizer(texts, { padding: true, truncation: true, max_length: settings.maxInputTokens });
  const outputs = (await model(inputs)) as Record<string, Tensor>;
  const mask = inputs.attention_mask as Tensor;
  const [batch, tokens] = mask.dims as [number, number];
  const maskData = mask.data as BigInt64Array;
  const tokenCounts = Array.from({ length: batch }, (_, b) => {
    let n = 0;
    for (let t = 0; t < tokens; t++) if (maskData[b * tokens + t]! > 0n) n++;
    return n;
  });
  let vectors: Float32Array[];
  // Some exports already pool (sentence_embedding); most return per-token states.
  const pooled = outputs.sentence_embedding;
  if (pooled) {
    const features = pooled.dims[1]!;
    const data = pooled.data as Float32Array;
    vectors = Array.from({ length: batch }, (_, b) => data.slice(b * features, (b + 1) * features));
  } else {
    const hidden = outputs.last_hidden_state ?? outputs[Object.keys(outputs)[0]!]!;
    vectors = pool(hidden.data as Float32Array, maskData, batch, tokens, hidden.dims[2]!, settings.pooling);
  }
  if (settings.normalize) vectors.forEach(normalize);
  return { vectors, tokens: tokenCounts };
}

serveWorker<Loaded, EmbeddingTask>({
  async load(data) {
    const settings = data as EmbeddingWorkerData;
    env.allowRemoteModels = false;
    env.useFSCache = false;
    const tokenizer = await AutoTokenizer.from_pretrained(settings.dir, { local_files_only: true });
    const model = await AutoModel.from_pretrained(settings.dir, {
      local_files_only: true,
      dtype: settings.dtype as never,
      ...transformersDeviceOptions(settings.executionProviders, settings.threads > 0 ? { intraOpNumThreads: settings.threads, interOpNumThreads: 1 } : {}),
    });
    const loaded: Loaded = { settings, tokenizer, model };
    const probe = await embedBatch(loaded, ["hello"]);
    return { context: loaded, info: { dimensions: probe.vectors[0]!.length } };
  },

  async run(loaded, task, io) {
    const result: EmbeddingWorkerResult = { vectors: [], tokens: [] };
    for (let start = 0; start < task.texts.length; start += loaded.settings.batchSize) {
      await io.checkpoint();
      const batch = await embedBatch(loaded, task.texts.slice(start, start + loaded.settings.batchSize));
      result.vectors.push(...batch.vectors);
      result.tokens.push(...batch.tokens);
    }
    return { result, transfer: result.vectors.map((v) => v.buffer as ArrayBuffer) };
  },
});
