import type { Cost } from "../../billing/credits.js";
import { maxTextCost, textCost } from "../../billing/pricing.js";
import type { RequestMeter } from "../../billing/RequestMeter.js";
import type { ModelEntry } from "../../config/modelRegistry.js";
import { InvalidRequestError } from "../../errors.js";
import { GenerationCutShortError } from "../../engines/GenerationCutShortError.js";
import { PlanRefusalError } from "../../engines/PlanRefusal.js";
import type { ChatEngine, CompleteOptions, CompleteResult, CompletionPrompt, EchoedPrompt, PlannedCompletion, TokenLogprob } from "../../engines/types.js";
import type { Metrics } from "../../metrics/Metrics.js";
import type { ModelManager } from "../../models/ModelManager.js";
import { checkTokenIds, toLogitBias } from "../chat/fromChatRequest.js";
import { startStreamedGeneration } from "../chat/streamedGeneration.js";
import { toUsage, toWireFinish } from "../chat/toChatCompletion.js";
import type { CompletionChunk, CompletionLogprobs, CompletionRequest, CompletionResponse } from "./schema.js";
import { withDeadline } from "../../http/withDeadline.js";
import type { MeteredRequest } from "../../http/meteredRequest.js";

/** The standard's max_tokens when the request leaves it out. */
export const DEFAULT_MAX_TOKENS = 16;

export interface PreparedCompletion {
  id: string;
  created: number;
  entry: ModelEntry;
  engine: ChatEngine;
  /** What the engine is asked to plan. */
  options: CompleteOptions;
  includeUsageChunk: boolean;
  /** Response headers this request adds (parameters accepted but not honoured). */
  headers: Record<string, string>;
  /** The legacy log probabilities were asked for (the engine may report them for ranking alone). */
  logprobs: boolean;
  /** best_of above n: the engine generates `candidates` per prompt, the response keeps the `n` best of each. */
  bestOf?: { n: number; candidates: number };
  meter: RequestMeter;
  /** Holds the planned request's most tokens against the key's TPM (429). */
  reserveTokens: (count: number) => void;
}

/** What `prepare` needs of the paid request it serves, once the route admitted it (see ChatCall). */
export type CompletionCall = Pick<MeteredRequest, "reserveTokens" | "meterFor" | "hold"> & { ctx: { requestId: string } };

type WireChoice = CompletionResponse["choices"][number];

/**
 * Wire request -> engine completion -> wire response, on the chat engines (the same model
 * registry, sampling, credit hold and settlement as chat). Knows nothing about Express.
 */
export class CompletionService {
  constructor(
    private readonly models: ModelManager,
    private readonly requestTimeoutMs: number,
    private readonly metrics: Metrics,
  ) {}

  /** The model a request names (404 when unknown): the route admits the request on it before `prepare` loads it. */
  entry(request: CompletionRequest): ModelEntry {
    return this.models.get(request.model, "text");
  }

  async prepare(entry: ModelEntry, request: CompletionRequest, call: CompletionCall): Promise<PreparedCompletion> {
    // Held until the request ends (the metered request releases it).
    const { engine } = call.hold(await this.models.acquire(entry.id, "chat"));
    const { features } = engine;
    const prompts = toPrompts(request.prompt);
    const n = request.n ?? 1;
    const unsupported: string[] = [];
    // Candidates are ranked by their tokens' log probabilities: an engine that reports none serves n, and says so.
    const wantsBest = request.best_of != null && request.best_of > n;
    const bestOf = wantsBest && features.logprobs ? { n, candidates: request.best_of! } : undefined;
    if (wantsBest && !bestOf) unsupported.push("best_of");
    const generated = bestOf?.candidates ?? n;
    if (generated * prompts.length > features.maxChoices) {
      const field = bestOf ? "best_of" : prompts.length > 1 ? "prompt" : "n";
      throw InvalidRequestError.forField(
        [field],
        `the model "${entry.id}" generates at most ${features.maxChoices} choices per request (prompts times ${bestOf ? "best_of" : "n"})`,
      );
    }
    if (request.logprobs != null && !features.logprobs) throw InvalidRequestError.forField(["logprobs"], `the model "${entry.id}" does not report log probabilities`);
    // An empty suffix asks for nothing a model without FIM tokens cannot do: a plain completion.
    const suffix = request.suffix === "" && !features.infill ? undefined : (request.suffix ?? undefined);
    if (suffix !== undefined && !features.infill) {
      throw InvalidRequestError.forField(["suffix"], `the model "${entry.id}" cannot fill in the middle: it has no FIM prefix/suffix/middle tokens`);
    }
    await refuseOverlongPrompts(engine, entry.id, prompts, suffix);
    const stop = request.stop == null ? [] : typeof request.stop === "string" ? [request.stop] : request.stop;
    const logitBias = toLogitBias(request.logit_bias);
    if (logitBias && features.ignoredSampling?.includes("logitBias")) unsupported.push("logit_bias");
    checkTokenIds(
      "logit_bias",
      Object.keys(request.logit_bias ?? {}).map((key) => [key, Number(key)] as const),
      features,
    );
    const meter = call.meterFor(entry.id);
    return {
      id: `cmpl-${call.ctx.requestId.replaceAll("-", "")}`,
      created: Math.floor(Date.now() / 1000),
      entry,
      engine,
      options: {
        prompts,
        choices: generated,
        suffix,
        echo: request.echo === true,
        echoLogprobs: request.logprobs != null,
        maxTokens: request.max_tokens ?? DEFAULT_MAX_TOKENS,
        sampling: {
          temperature: request.temperature ?? entry.constraints.temperature.default,
          topP: request.top_p ?? entry.constraints.top_p.default,
          seed: request.seed ?? undefined,
          frequencyPenalty: request.frequency_penalty ?? undefined,
          presencePenalty: request.presence_penalty ?? undefined,
          logitBias,
        },
        stop: stop.filter((s) => s.length > 0),
        // Ranking needs each sampled token's log probability, not its alternatives.
        logprobs: request.logprobs != null ? { top: request.logprobs } : bestOf ? { top: 0 } : undefined,
      },
      includeUsageChunk: request.stream_options?.include_usage === true,
      headers: unsupported.length > 0 ? { "x-service-unsupported-parameters": unsupported.join(",") } : {},
      logprobs: request.logprobs != null,
      bestOf,
      meter,
      reserveTokens: (count) => call.reserveTokens(count),
    };
  }

  /**
   * The engine plans the prompts (tokenizes and measures them, refuses what the model cannot
   * do), then the most the request can use is reserved, tokens per minute and credits, before
   * anything runs.
   */
  private async plan(prepared: PreparedCompletion): Promise<PlannedCompletion> {
    let planned: PlannedCompletion;
    try {
      planned = await prepared.engine.planCompletion(prepared.options);
    } catch (error) {
      throw error instanceof PlanRefusalError ? toInvalidRequest(error, prepared.options.prompts.length) : error;
    }
    prepared.reserveTokens(planned.promptTokens + planned.maxTokens);
    prepared.meter.reserve(maxTextCost(prepared.entry, planned.promptTokens, planned.maxTokens));
    return planned;
  }

  /** Non-streaming: the whole completion, or 504 past the configured timeout. */
  async complete(prepared: PreparedCompletion, clientSignal: AbortSignal): Promise<{ response: CompletionResponse; result: CompleteResult }> {
    const planned = await this.plan(prepared);
    const timer = this.metrics.chatTimer(prepared.entry.id);
    const result = await withDeadline(clientSignal, this.requestTimeoutMs, (signal) =>
      planned.generate({ signal, onStart: () => timer.started(), onDelta: (index) => timer.piece(index) }),
    );
    timer.finished(result);
    // Every candidate is charged (usage counts their tokens), as the standard bills best_of.
    const cost = settle(prepared, result);
    const n = prepared.bestOf?.n ?? prepared.options.choices ?? 1;
    const wantLogprobs = prepared.logprobs;
    const kept = prepared.bestOf ? bestCandidates(result.choices, prepared.bestOf) : result.choices;
    const choices = kept.map((choice): WireChoice => {
      const echoed = result.echoed?.[Math.floor(choice.index / n)];
      const logprobs = new LegacyLogprobs();
      let text = "";
      if (echoed) {
        text += echoed.text;
        if (wantLogprobs) logprobs.addPrompt(echoed);
      }
      if (wantLogprobs) logprobs.add(choice.logprobs ?? []);
      text += choice.content;
      return { index: choice.index, text, logprobs: wantLogprobs ? logprobs.value() : null, finish_reason: toWireFinish(choice.finishReason) as "stop" | "length" };
    });
    return {
      result,
      response: { id: prepared.id, object: "text_completion", created: prepared.created, model: prepared.entry.id, choices, usage: toUsage(result), cost },
    };
  }

  /**
   * Streaming: yields chunks as tokens arrive; the last value returned is the engine result
   * (for metering). Aborting `signal` stops generation at once and frees the sequences.
   */
  async *stream(prepared: PreparedCompletion, signal: AbortSignal): AsyncGenerator<CompletionChunk, CompleteResult | undefined> {
    const planned = await this.plan(prepared);
    const base = { id: prepared.id, object: "text_completion" as const, created: prepared.created, model: prepared.entry.id };
    const usageField = prepared.includeUsageChunk ? { usage: null } : {};
    const n = prepared.options.choices ?? 1;
    const wantLogprobs = prepared.logprobs;
    const total = n * prepared.options.prompts.length;
    // Offsets continue across a choice's chunks, so each choice keeps its own.
    const offsets = Array.from({ length: total }, () => new LegacyLogprobs());
    const { queue, generation } = await startStreamedGeneration<CompleteResult, CompletionChunk["choices"][number]>(
      this.metrics.chatTimer(prepared.entry.id),
      ({ onStart, onPiece }, queue) =>
        planned.generate({
          // The echoed prompt goes out first, as each choice's first piece.
          onEcho: (prompt, echoed) => {
            for (let j = 0; j < n; j++) {
              const index = prompt * n + j;
              const logprobs = offsets[index]!;
              if (wantLogprobs) logprobs.addPrompt(echoed);
              queue.push({ index, text: echoed.text, logprobs: wantLogprobs ? logprobs.value(0) : null, finish_reason: null });
            }
          },
          signal,
          onStart,
          onDelta: (index, delta) => {
            onPiece(index);
            const logprobs = offsets[index]!;
            const start = logprobs.length;
            if (wantLogprobs) logprobs.add(delta.logprobs ?? []);
            queue.push({ index, text: delta.text, logprobs: wantLogprobs ? logprobs.value(start) : null, finish_reason: null });
          },
        }),
    );

    let result: CompleteResult;
    try {
      for await (const choice of queue) yield { ...base, choices: [choice], ...usageField };
      result = await generation;
    } catch (error) {
      // A relay whose upstream died mid-stream says what it had streamed: that is charged, then the stream ends with the error.
      if (error instanceof GenerationCutShortError) settle(prepared, error.partial);
      throw error;
    }
    // A client that went away pays for what was produced.
    const cost = settle(prepared, result);
    if (result.finishReason === "abort") return result;
    for (const [position, choice] of result.choices.entries()) {
      const last = position === result.choices.length - 1;
      yield {
        ...base,
        choices: [{ index: choice.index, text: "", logprobs: null, finish_reason: toWireFinish(choice.finishReason) as "stop" | "length" }],
        ...usageField,
        ...(last ? { cost } : {}),
      };
    }
    if (prepared.includeUsageChunk) yield { ...base, choices: [], usage: toUsage(result), cost };
    return result;
  }
}

/**
 * best_of: of each prompt's candidates, the `n` with the highest mean log probability per token
 * (the standard's rule), best first, numbered as n choices per prompt are. A candidate with no
 * tokens has no such mean and ranks last; ties keep the order generated.
 */
export function bestCandidates<C extends { index: number; logprobs: readonly { logprob: number }[] | null }>(
  candidates: readonly C[],
  { n, candidates: perPrompt }: { n: number; candidates: number },
): C[] {
  const meanLogprob = (choice: C) => {
    const tokens = choice.logprobs ?? [];
    return tokens.length === 0 ? Number.NEGATIVE_INFINITY : tokens.reduce((sum, t) => sum + t.logprob, 0) / tokens.length;
  };
  const kept: C[] = [];
  for (let prompt = 0; prompt * perPrompt < candidates.length; prompt++) {
    const own = candidates.filter((choice) => Math.floor(choice.index / perPrompt) === prompt);
    const ranked = own.map((choice) => ({ choice, score: meanLogprob(choice) })).sort((a, b) => b.score - a.score || a.choice.index - b.choice.index);
    for (const [j, { choice }] of ranked.slice(0, n).entries()) kept.push({ ...choice, index: prompt * n + j });
  }
  return kept;
}

/** What a chat engine refuses while planning completion prompts, as the wire's 400 naming the prompt. */
function toInvalidRequest(error: PlanRefusalError, promptCount: number): InvalidRequestError {
  const { refusal, modelId } = error;
  const promptPath = (prompt: number | null) => (prompt === null ? ["prompt"] : ["prompt", prompt]);
  switch (refusal.kind) {
    case "promptTooLong":
      return InvalidRequestError.forField(
        promptPath(promptCount > 1 ? refusal.prompt : null),
        `the prompt is ${refusal.promptTokens} tokens but this model's context holds ${refusal.contextSize}; shorten the prompt`,
      );
    case "tokenOutsideVocabulary":
      return InvalidRequestError.forField(
        [...promptPath(refusal.prompt), refusal.position],
        `token id ${refusal.id} is outside this model's vocabulary (0 to ${refusal.vocabularySize - 1})`,
      );
    case "emptyPrompt":
      return InvalidRequestError.forField(promptPath(refusal.prompt), "the prompt is empty and this model has no beginning-of-sequence token to start from");
    case "noInfillTokens":
      return InvalidRequestError.forField(
        ["suffix"],
        `the model "${modelId}" cannot fill in the middle: its vocabulary has no FIM prefix/suffix/middle tokens; send the prompt without a suffix, or use a code model that has them`,
      );
    case "echoUnavailable":
      return InvalidRequestError.forField(["echo"], "echo is relayed to this upstream model only for text prompts without logprobs");
  }
}

/** Text longer than this is counted in slices (the event loop free between them) before it is tokenized whole. */
const MEASURE_ABOVE_CHARS = 4096;

/**
 * A raw prompt (with its FIM suffix) that cannot fit the context is refused before it is
 * tokenized on the event loop: by its length alone where the engine has a sound character bound
 * (as chat does, see chat/promptBound.ts), else, when long, by counting its tokens in slices.
 */
async function refuseOverlongPrompts(engine: ChatEngine, modelId: string, prompts: readonly CompletionPrompt[], suffix: string | undefined): Promise<void> {
  for (const [i, prompt] of prompts.entries()) {
    if (typeof prompt !== "string") continue;
    const field = prompts.length > 1 ? ["prompt", i] : ["prompt"];
    const chars = prompt.length + (suffix?.length ?? 0);
    const tooLong = () =>
      InvalidRequestError.forField(
        field,
        `${suffix ? "this prompt and the suffix have" : "this prompt has"} more than ${engine.contextSize} tokens; ${modelId}'s context holds ${engine.contextSize}`,
      );
    if (engine.maxPromptChars !== undefined && chars > engine.maxPromptChars) throw tooLong();
    if (chars > MEASURE_ABOVE_CHARS && engine.countTokensAtLeast) {
      const texts = suffix ? [prompt, suffix] : [prompt];
      if ((await engine.countTokensAtLeast(texts, engine.contextSize)) > engine.contextSize) throw tooLong();
    }
  }
}

/** `prompt` in its four wire forms as a list of prompts (a string, strings, token ids, lists of token ids). */
export function toPrompts(prompt: CompletionRequest["prompt"]): CompletionPrompt[] {
  if (typeof prompt === "string") return [prompt];
  if (prompt.length > 0 && typeof prompt[0] === "number") return [prompt as number[]];
  return prompt as CompletionPrompt[];
}

/**
 * One choice's legacy log probabilities, built up piece by piece: text_offset is each token's
 * character offset in the choice's text (which starts with the prompt when echoed).
 */
class LegacyLogprobs {
  private readonly tokens: string[] = [];
  private readonly tokenLogprobs: (number | null)[] = [];
  private readonly top: (Record<string, number> | null)[] = [];
  private readonly offsets: number[] = [];
  private offset = 0;

  get length(): number {
    return this.tokens.length;
  }

  /** The echoed prompt: its text, and its tokens when the engine reported them. */
  addPrompt(echoed: EchoedPrompt): void {
    if (!echoed.tokens) {
      this.offset += echoed.text.length;
      return;
    }
    // The first prompt token has no log probability (nothing precedes it): null, as the standard has it.
    for (const entry of echoed.tokens) this.push(entry.token, entry.logprob, entry.logprob === null ? null : topOf(entry));
  }

  add(entries: readonly TokenLogprob[]): void {
    for (const entry of entries) this.push(entry.token, entry.logprob, topOf(entry));
  }

  private push(token: string, logprob: number | null, top: Record<string, number> | null): void {
    this.tokens.push(token);
    this.tokenLogprobs.push(logprob);
    this.top.push(top);
    this.offsets.push(this.offset);
    this.offset += token.length;
  }

  /** The lists from entry `start` on (a stream chunk's share). */
  value(start = 0): CompletionLogprobs {
    return {
      tokens: this.tokens.slice(start),
      token_logprobs: this.tokenLogprobs.slice(start),
      top_logprobs: this.top.slice(start),
      text_offset: this.offsets.slice(start),
    };
  }
}

function topOf(entry: Pick<TokenLogprob, "top">): Record<string, number> {
  return Object.fromEntries(entry.top.map((t) => [t.token, t.logprob]));
}

/** Charges the produced tokens of every choice (idempotent: the route settles again in `finally`). */
function settle(prepared: PreparedCompletion, result: CompleteResult): Cost {
  return prepared.meter.settle(
    textCost(prepared.entry, {
      promptTokens: result.promptTokens,
      cachedTokens: result.cachedTokens,
      cacheWriteTokens: result.cacheWriteTokens,
      completionTokens: result.completionTokens,
    }),
  );
}
