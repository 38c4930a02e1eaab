import { fetchFailureCause } from "../../http/fetchFailureCause.js";
import type { UpstreamSettings } from "../../config/backendSettings.js";
import type { ModelEntry } from "../../config/modelRegistry.js";
import { InvalidRequestError, ModelAtCapacityError, UpstreamError } from "../../errors.js";
import type { RelaySpeechEngine, SynthesizeOptions } from "../types.js";

/**
 * Speech relayed to another server that speaks the same standard: POST {baseUrl}/audio/speech
 * (another Hearth, or a hosted provider). Hearth keeps keys, limits and credits; the upstream
 * synthesises. Streaming requests are piped through as the upstream sends them.
 */
export class UpstreamSpeechEngine implements RelaySpeechEngine {
  readonly kind = "speech";
  readonly output = "relay";
  readonly router: string;

  private constructor(
    private readonly settings: UpstreamSettings & { baseUrl: string },
    private readonly upstreamModel: string,
    private readonly voiceNames: readonly string[],
    private readonly modelId: string,
  ) {
    this.router = `upstream ${new URL(settings.baseUrl).host}`;
  }

  static async load(entry: ModelEntry): Promise<UpstreamSpeechEngine> {
    const settings = entry.upstream;
    if (!settings?.baseUrl) throw new Error("no upstream base URL is configured (upstream.baseUrl or the variable named by upstream.baseUrlEnv)");
    const model = settings.model ?? entry.id;
    const voices = entry.speech.voices ?? (await fetchVoices(settings.baseUrl, model, settings.apiKey));
    return new UpstreamSpeechEngine({ ...settings, baseUrl: settings.baseUrl.replace(/\/+$/, "") }, model, voices, entry.id);
  }

  /** Empty when the upstream's voices are unknown: any voice is passed on and the upstream judges it. */
  voices(): readonly string[] {
    return this.voiceNames;
  }

  async speak(options: SynthesizeOptions & { format: string; streaming: boolean }) {
    if (options.voice.kind !== "preset") throw InvalidRequestError.forField(["voice"], "cloned voices are not available on relayed models");
    const headers: Record<string, string> = { "content-type": "application/json", accept: "application/octet-stream" };
    if (this.settings.apiKey) headers.authorization = `Bearer ${this.settings.apiKey}`;
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
    // The timeout covers waiting for the response to start; a stream then runs as long as it needs.
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new Error("upstream timed out")), this.settings.timeoutMs);
    const signal = options.signal ? AbortSignal.any([options.signal, controller.signal]) : controller.signal;
    let response: Response;
    try {
      response = await fetch(`${this.settings.baseUrl}/audio/speech`, { method: "POST", headers, body: JSON.stringify(body), signal });
    } catch (error) {
      if (options.signal?.aborted) throw error;
      // As for chat: an upstream that cannot be reached is a 503 (try again later), naming the host and the cause.
      throw new UpstreamError(`The upstream speech server at ${new URL(this.settings.baseUrl).host} could not be reached: ${fetchFailureCause(error)}`, 503);
    } finally {
      clearTimeout(timer);
    }
    if (!response.ok) await throwUpstreamError(response, this.modelId);
    if (!response.body) throw new UpstreamError("The upstream speech server sent no audio");
    return { contentType: response.headers.get("content-type") ?? "application/octet-stream", body: response.body as AsyncIterable<Uint8Array> };
  }

  async dispose(): Promise<void> {}
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
async function throwUpstreamError(response: Response, modelId: string): Promise<never> {
  let message = response.statusText;
  let details: unknown;
  try {
    const body = (await response.json()) as { error?: string; details?: unknown };
    message = body.error ?? message;
    details = body.details;
  } catch {
    // Not JSON: keep the status text.
  }
  if (response.status === 400 || response.status === 422) throw new InvalidRequestError(`Upstream: ${message}`, details);
  if (response.status === 429 || response.status === 503) throw new ModelAtCapacityError(modelId);
  if (response.status === 401 || response.status === 403 || response.status === 402)
    throw new UpstreamError(`The upstream speech server refused this node (${response.status}: ${message})`);
  throw new UpstreamError(`The upstream speech server failed (${response.status}: ${message})`);
}
