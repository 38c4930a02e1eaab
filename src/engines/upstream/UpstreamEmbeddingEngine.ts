import type { ModelEntry } from "../../config/modelRegistry.js";
import { upstreamReplicas } from "../../config/upstreamReplicas.js";
import { type ApiError, UpstreamError } from "../../errors.js";
import { fetchFailureCause } from "../../http/fetchFailureCause.js";
import type { EmbeddingEngine, EmbedResult } from "../types.js";
import { checkReplicaHealth } from "./checkReplicaHealth.js";
import { type Replica, ReplicaPool, type ReplicaOutcome } from "./ReplicaPool.js";
import { upstreamFailure } from "./upstreamFailure.js";

/** Used when the registry does not bound an input: the upstream refuses longer ones itself. */
const UPSTREAM_DEFAULT_MAX_INPUT_TOKENS = 8192;
/** Embedded once when the model loads, to learn the vector size (a few tokens on the upstream's bill). */
const DIMENSIONS_PROBE = "dimensions";

/** A replica's failure before it answered: another replica may take the request. */
class FailedBeforeAnswer extends Error {
  constructor(readonly failure: ApiError) {
    super(failure.message);
  }
}

interface WireEmbeddings {
  data?: { index?: number; embedding?: unknown }[];
  usage?: { prompt_tokens?: number } | null;
}

/**
 * Embeddings relayed to another server of the standard (another Hearth, vLLM, a provider), or to
 * a pool of them: POST {baseUrl}/embeddings, the least loaded replica first, once more on another
 * when the first fails before answering. The upstream's tokenizer is not here, so the counts
 * before the request are bounds (UTF-8 bytes) and the upstream's usage is what is billed
 * (`countsAreBounds`).
 */
export class UpstreamEmbeddingEngine implements EmbeddingEngine {
  readonly kind = "embedding" as const;
  readonly router: string;
  readonly countsAreBounds = true;

  private constructor(
    readonly replicaPool: ReplicaPool,
    private readonly upstreamModel: string,
    private readonly modelId: string,
    private readonly timeoutMs: number,
    readonly dimensions: number,
    readonly maxInputTokens: number,
  ) {
    const replicas = replicaPool.replicas;
    this.router = replicas.length === 1 ? `upstream ${replicas[0]!.host}` : `upstream pool of ${replicas.length}`;
  }

  static async load(entry: ModelEntry): Promise<UpstreamEmbeddingEngine> {
    const settings = entry.upstream;
    const { replicas, unresolved } = settings ? upstreamReplicas(settings) : { replicas: [], unresolved: ["no upstream settings"] };
    if (!settings || unresolved.length > 0 || replicas.length === 0)
      throw new Error(`no upstream base URL is configured (upstream.baseUrl, upstream.baseUrlEnv or upstream.replicas): ${unresolved.join("; ")}`);
    const pool = new ReplicaPool(replicas, { modelId: entry.id, healthCheck: settings.healthCheck, check: checkReplicaHealth });
    const maxInputTokens = entry.embedding.maxInputTokens ?? UPSTREAM_DEFAULT_MAX_INPUT_TOKENS;
    const probe = new UpstreamEmbeddingEngine(pool, settings.model ?? entry.id, entry.id, settings.timeoutMs, 0, maxInputTokens);
    const { vectors } = await probe.embed([DIMENSIONS_PROBE]);
    const dimensions = vectors[0]!.length;
    if (dimensions === 0) throw new Error(`the upstream's embeddings of ${probe.upstreamModel} are empty`);
    return new UpstreamEmbeddingEngine(pool.startHealthChecks(), probe.upstreamModel, entry.id, settings.timeoutMs, dimensions, maxInputTokens);
  }

  /** An upper bound per input: byte-level tokenizers never make more tokens than UTF-8 bytes, plus two special tokens. */
  async countTokens(texts: readonly string[]): Promise<number[]> {
    return texts.map((text) => Buffer.byteLength(text, "utf8") + 2);
  }

  async embed(texts: readonly string[], options: { signal?: AbortSignal } = {}): Promise<EmbedResult> {
    const tried = new Set<Replica>();
    let replica = this.replicaPool.choose(undefined);
    for (;;) {
      tried.add(replica);
      try {
        return await this.embedOn(replica, texts, options.signal);
      } catch (error) {
        if (!(error instanceof FailedBeforeAnswer)) throw error;
        const next = tried.size < 2 && !options.signal?.aborted ? this.replicaPool.pick(undefined, tried) : undefined;
        if (!next) throw error.failure;
        replica = next;
      }
    }
  }

  private async embedOn(replica: Replica, texts: readonly string[], callerSignal: AbortSignal | undefined): Promise<EmbedResult> {
    const call = this.replicaPool.begin(replica);
    let outcome: ReplicaOutcome = { ok: true };
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const signal = callerSignal ? AbortSignal.any([callerSignal, timeout]) : timeout;
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (replica.settings.apiKey) headers.authorization = `Bearer ${replica.settings.apiKey}`;
    const failed = (failure: ApiError, eject: boolean) => {
      outcome = { ok: false, error: failure.message, eject };
      return new FailedBeforeAnswer(failure);
    };
    try {
      let response: Response;
      try {
        const body = JSON.stringify({ model: this.upstreamModel, input: texts, encoding_format: "float" });
        response = await fetch(`${replica.settings.baseUrl}/embeddings`, { method: "POST", headers, body, signal });
      } catch (error) {
        if (callerSignal?.aborted) throw callerSignal.reason ?? error;
        if (timeout.aborted) throw failed(new UpstreamError(`The upstream embedding server at ${replica.host} did not answer within ${this.timeoutMs} ms`, 504), true);
        throw failed(new UpstreamError(`The upstream embedding server at ${replica.host} could not be reached: ${fetchFailureCause(error)}`, 503), true);
      }
      call.answered();
      if (!response.ok) {
        const failure = await upstreamFailure(response, replica.host, this.modelId);
        if (response.status === 429 || response.status === 503) throw failed(failure, false);
        if (response.status >= 500) throw failed(failure, true);
        throw failure;
      }
      return toEmbedResult((await response.json()) as WireEmbeddings, texts, replica.host);
    } catch (error) {
      if (!(error instanceof FailedBeforeAnswer) && !callerSignal?.aborted && outcome.ok) outcome = { ok: false, error: (error as Error).message, eject: false };
      throw error;
    } finally {
      call.end(outcome);
    }
  }

  async dispose(): Promise<void> {
    this.replicaPool.dispose();
  }
}

/** The vectors in input order, and the upstream's token total shared by the inputs in proportion to their length. */
function toEmbedResult(wire: WireEmbeddings, texts: readonly string[], host: string): EmbedResult {
  const data = wire.data ?? [];
  if (data.length !== texts.length) throw new UpstreamError(`The upstream embedding server at ${host} sent ${data.length} vectors for ${texts.length} inputs`);
  const vectors: Float32Array[] = new Array(texts.length);
  for (const [position, item] of data.entries()) {
    if (!Array.isArray(item.embedding)) throw new UpstreamError(`The upstream embedding server at ${host} sent a vector that is not a list of numbers`);
    vectors[item.index ?? position] = Float32Array.from(item.embedding as number[]);
  }
  const bytes = texts.map((text) => Buffer.byteLength(text, "utf8"));
  const total = wire.usage?.prompt_tokens ?? bytes.reduce((a, b) => a + Math.ceil(b / 4), 0);
  return { vectors, tokens: shareOut(total, bytes) };
}

/** `total` split in proportion to `weights`, in whole numbers that add up to it (largest remainders). */
function shareOut(total: number, weights: readonly number[]): number[] {
  const sum = weights.reduce((a, b) => a + b, 0) || 1;
  const exact = weights.map((w) => (total * w) / sum);
  const shares = exact.map(Math.floor);
  let left = total - shares.reduce((a, b) => a + b, 0);
  const order = exact.map((x, i) => ({ i, rest: x - Math.floor(x) })).sort((a, b) => b.rest - a.rest);
  for (const { i } of order) {
    if (left <= 0) break;
    shares[i]!++;
    left--;
  }
  return shares;
}
