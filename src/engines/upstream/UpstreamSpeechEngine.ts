import { fetchFailureCause } from "../../http/fetchFailureCause.js";
import type { UpstreamSettings } from "../../config/backendSettings.js";
import type { ModelEntry } from "../../config/modelRegistry.js";
import { upstreamReplicas } from "../../config/upstreamReplicas.js";
import { InvalidRequestError, ModelAtCapacityError, UpstreamError } from "../../errors.js";
import type { RelaySpeechEngine, SynthesizeOptions } from "../types.js";
import { checkReplicaHealth } from "./checkReplicaHealth.js";
import { type Replica, ReplicaPool, type ReplicaOutcome } from "./ReplicaPool.js";
import { upstreamLimitingError } from "./upstreamFailure.js";

/** A replica's failure before any audio was passed on: another replica may take the request. */
class FailedBeforeAudio extends Error {
  constructor(readonly failure: Error) {
    super(failure.message);
  }
}

/**
 * Speech relayed to another server that speaks the same standard: POST {baseUrl}/audio/speech
 * (another Hearth, or a hosted provider), or to a pool of them (least loaded replica first; a
 * replica that fails before answering is ejected and the request tried once on another).
 * Hearth keeps keys, limits and credits; the upstream synthesises. Streaming requests are piped
 * through as the upstream sends them.
 */
export class UpstreamSpeechEngine implements RelaySpeechEngine {
  readonly kind = "speech";
  readonly output = "relay";
  readonly router: string;

  private constructor(
    private readonly settings: UpstreamSettings,
    readonly replicaPool: ReplicaPool,
    private readonly upstreamModel: string,
    private readonly voiceNames: readonly string[],
    private readonly modelId: string,
  ) {
    const replicas = replicaPool.replicas;
    this.router = replicas.length === 1 ? `upstream ${replicas[0]!.host}` : `upstream pool of ${replicas.length}`;
  }

  static async load(entry: ModelEntry): Promise<UpstreamSpeechEngine> {
    const settings = entry.upstream;
    const { replicas, unresolved } = settings ? upstreamReplicas(settings) : { replicas: [], unresolved: ["no upstream settings"] };
    if (!settings || unresolved.length > 0 || replicas.length === 0)
      throw new Error(`no upstream base URL is configured (upstream.baseUrl, upstream.baseUrlEnv or upstream.replicas): ${unresolved.join("; ")}`);
    const model = settings.model ?? entry.id;
    const voices = entry.speech.voices ?? (await fetchVoices(replicas[0]!.baseUrl, model, replicas[0]!.apiKey));
    const pool = new ReplicaPool(replicas, { modelId: entry.id, healthCheck: settings.healthCheck, check: checkReplicaHealth });
    return new UpstreamSpeechEngine(settings, pool.startHealthChecks(), model, voices, entry.id);
  }

  /** Empty when the upstream's voices are unknown: any voice is passed on and the upstream judges it. */
  voices(): readonly string[] {
    return this.voiceNames;
  }

  async speak(options: SynthesizeOptions & { format: string; streaming: boolean }) {
    if (options.voice.kind !== "preset") throw InvalidRequestError.forField(["voice"], "cloned voices are not available on relayed models");
    const body = {
      model: this.upstreamModel,
      input: options.text,
      voice: options.voice.name,
      response_format: options.format,
      speed: options.speed,
      streaming: options.streaming,
      ...(options.language ? { language: options.language } : {}),
      ...(options.prompt ? { prompt: options.prompt } : {}),
      ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
      ...(options.topP !== undefined ? { top_p: options.topP } : {}),
    };
    const tried = new Set<Replica>();
    let replica = this.replicaPool.choose(undefined);
    for (;;) {
      tried.add(replica);
      try {
        return await this.speakOn(replica, body, options.signal);
      } catch (error) {
        if (!(error instanceof FailedBeforeAudio)) throw error;
        const next = tried.size < 2 && !options.signal?.aborted ? this.replicaPool.pick(undefined, tried) : undefined;
        if (!next) throw error.failure;
        replica = next;
      }
    }
  }

  private async speakOn(replica: Replica, body: Record<string, unknown>, callerSignal: AbortSignal | undefined) {
    const headers: Record<string, string> = { "content-type": "application/json", accept: "application/octet-stream" };
    if (replica.settings.apiKey) headers.authorization = `Bearer ${replica.settings.apiKey}`;
    const call = this.replicaPool.begin(replica);
    // The timeout covers waiting for the response to start; a stream then runs as long as it needs.
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new Error("upstream timed out")), this.settings.timeoutMs);
    const signal = callerSignal ? AbortSignal.any([callerSignal, controller.signal]) : controller.signal;
    let response: Response;
    try {
      response = await fetch(`${replica.settings.baseUrl}/audio/speech`, { method: "POST", headers, body: JSON.stringify(body), signal });
    } catch (error) {
      if (callerSignal?.aborted) {
        call.end({ ok: true });
        throw error;
      }
      // As for chat: an upstream that cannot be reached is a 503 (try again later), naming the host and the cause.
      const failure = new UpstreamError(`The upstream speech server at ${replica.host} could not be reached: ${fetchFailureCause(error)}`, 503);
      call.end({ ok: false, error: failure.message, eject: true });
      throw new FailedBeforeAudio(failure);
    } finally {
      clearTimeout(timer);
    }
    call.answered();
    if (!response.ok) {
      const failure = await upstreamSpeechError(response, replica.host, this.modelId);
      const replicaFault = response.status >= 500 || response.status === 429;
      call.end(replicaFault ? { ok: false, error: failure.message, eject: response.status !== 503 && response.status !== 429 } : { ok: true });
      throw replicaFault ? new FailedBeforeAudio(failure) : failure;
    }
    if (!response.body) {
      call.end({ ok: false, error: "no audio", eject: false });
      throw new UpstreamError("The upstream speech server sent no audio");
    }
    return { contentType: response.headers.get("content-type") ?? "application/octet-stream", body: countedUntilDone(response.body as AsyncIterable<Uint8Array>, call) };
  }

  async dispose(): Promise<void> {
    this.replicaPool.dispose();
  }
}

/** The audio as it comes, the replica's request counted in flight until the last byte (or the caller's stop). */
async function* countedUntilDone(body: AsyncIterable<Uint8Array>, call: { end(outcome: ReplicaOutcome): void }): AsyncGenerator<Uint8Array> {
  let outcome: ReplicaOutcome = { ok: true };
  try {
    for await (const chunk of body) yield chunk;
  } catch (error) {
    outcome = { ok: false, error: `the audio stream broke: ${fetchFailureCause(error)}`, eject: true };
    throw error;
  } finally {
    call.end(outcome);
  }
}

async function fetchVoices(baseUrl: string, model: string, apiKey: string | undefined): Promise<string[]> {
  try {
    const response = await fetch(`${baseUrl.replace(/\/+$/, "")}/models/${model}`, {
      headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {},
      signal: AbortSignal.timeout(10_000),
    });
    if (!response.ok) return [];
    const record = (await response.json()) as { model_spec?: { voices?: unknown } };
    const voices = record.model_spec?.voices;
    return Array.isArray(voices) ? voices.filter((v): v is string => typeof v === "string") : [];
  } catch {
    return [];
  }
}

/** The caller's mistakes (400) keep their status and message; the node's problems with the upstream become 502/503. */
async function upstreamSpeechError(response: Response, host: string, modelId: string): Promise<Error> {
  let message = response.statusText;
  let details: unknown;
  try {
    const body = (await response.json()) as { error?: string; details?: unknown };
    message = body.error ?? message;
    details = body.details;
  } catch {
    // Not JSON: keep the status text.
  }
  if (response.status === 400 || response.status === 422) return new InvalidRequestError(`Upstream: ${message}`, details);
  if (response.status === 429) return upstreamLimitingError(response, host, message);
  if (response.status === 503) return new ModelAtCapacityError(modelId);
  if (response.status === 401 || response.status === 403 || response.status === 402)
    return new UpstreamError(`The upstream speech server refused this node (${response.status}: ${message})`);
  return new UpstreamError(`The upstream speech server failed (${response.status}: ${message})`);
}
