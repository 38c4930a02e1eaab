import { randomInt } from "node:crypto";
import { LlamaGrammarEvaluationState, type LlamaContextSequence, type LlamaGrammar, type LlamaModel, type SequenceEvaluateOptions, type Token } from "node-llama-cpp";
import { InferenceError } from "../../errors.js";
import type { ChatChoiceResult, ChatDelta, FinishReason, SamplingOptions, TokenLogprob, ToolCall } from "../types.js";
import type { ThoughtSyntax, ToolCallSyntax } from "./ChatSyntax.js";
import { DynamicTemperatureSampler } from "./DynamicTemperatureSampler.js";
import { ReasoningSplitter } from "./ReasoningSplitter.js";
import { samplerBuffers } from "./SamplerBufferCollector.js";
import type { StepBarrier } from "./StepBarrier.js";
import { StreamingDetokenizer } from "./StreamingDetokenizer.js";
import { tokenBiasFor } from "./tokenBiasFor.js";
import type { TokenDescriber } from "./TokenDescriber.js";

/** Everything one request decided before generation; shared by its choices. */
export interface GenerationPlan {
  promptTokens: Token[];
  stopStrings: string[];
  /** The template's end-of-turn tokens. */
  stopTokens: ReadonlySet<Token>;
  /** The caller's stop_token_ids. */
  userStopTokens: ReadonlySet<Token>;
  maxTokens: number;
  sampling: SamplingOptions;
  /** Seed of choice 0; choice i uses seed + i so choices differ. */
  seed: number;
  logprobs: { top: number } | null;
  /** What the answer is: free text, JSON held to a grammar, or a call the model is made to make (any function, or the named one). */
  answer: { kind: "text" } | { kind: "json"; grammar: LlamaGrammar } | { kind: "call"; name: string | null };
  tools: ToolPlan | null;
  thinking: {
    /** The prompt leaves the model inside an open thought block. */
    startsInReasoning: boolean;
    /** Open a thought block at the start of the answer. */
    open: boolean;
    /** Close the block after this many tokens. */
    budget: number | null;
  };
}

export interface ToolPlan {
  syntax: ToolCallSyntax;
  /** Grammar of the function names (the text between the call prefix and the arguments). */
  nameGrammar: LlamaGrammar;
  argumentsGrammar(name: string): LlamaGrammar;
  /** Watch free text for the model starting a call on its own (tool_choice auto). */
  detect: boolean;
  parallel: boolean;
}

export interface ChoiceRuntime {
  model: LlamaModel;
  thought: ThoughtSyntax;
  describer: TokenDescriber;
  /** Shared by every sequence of the context: generating sequences take their steps together. */
  barrier: StepBarrier;
  /** Tokens in the model's vocabulary (what each evaluation's sampler holds a buffer for). */
  vocabularySize: number;
}

export interface ChoiceOutcome extends ChatChoiceResult {
  cachedTokens: number;
  timeToFirstTokenMs: number | null;
}

/**
 * free: text, which a thought block may open and close; json: the answer, held to a
 * grammar; callName / callArguments: a tool call, each part held to its grammar;
 * afterCall: between calls, where only another call or the end of the turn may follow.
 */
type Phase = "free" | "json" | "callName" | "callArguments" | "afterCall";

/** The tokens to evaluate next (the sampled one, usually, plus anything injected), or the end. */
type Step = { evaluate: Token[] } | { finish: FinishReason };

/**
 * One choice of a request, generated on one sequence by Hearth's own token loop over
 * `sequence.evaluateWithMetadata`. Everything shares this loop: streaming deltas, stop
 * strings and tokens, log probabilities, thought blocks, grammar-held JSON and tool calls.
 * Forced text (a call's opening, a thought block's tags) is injected by handing the
 * iterator the tokens to evaluate next instead of the one it sampled; a phase that samples
 * differently (another grammar, another temperature) continues on a fresh iterator over
 * the same sequence.
 */
export class ChoiceGeneration {
  private phase: Phase = "free";
  private readonly output: Token[] = [];
  private readonly text: StreamingDetokenizer;
  private raw: StreamingDetokenizer;
  private readonly splitter: ReasoningSplitter;
  private content = "";
  private reasoning = "";
  private reasoningTokens = 0;
  private readonly toolCalls: ToolCall[] = [];
  private callName = "";
  private grammarState: LlamaGrammarEvaluationState | undefined;
  /** Bumped whenever the sampling configuration changes, so the loop starts a fresh iterator. */
  private samplingVersion = 0;
  private readonly pendingLogprobs: TokenLogprob[] = [];
  private readonly logprobs: TokenLogprob[] | null;
  private readonly dynamicSampler: DynamicTemperatureSampler | null;
  private readonly seed: number;
  /** Deltas waiting for the next decode to be under way (StepBarrier.holdsOutput). */
  private readonly heldDeltas: ChatDelta[] = [];
  private heldReleaseScheduled = false;
  private readonly releaseHeld = () => this.releaseHeldDeltas();

  constructor(
    private readonly runtime: ChoiceRuntime,
    private readonly plan: GenerationPlan,
    private readonly index: number,
    private readonly onDelta: ((choice: number, delta: ChatDelta) => void) | undefined,
  ) {
    const { model, thought } = runtime;
    this.text = new StreamingDetokenizer(model, plan.stopStrings);
    this.raw = new StreamingDetokenizer(model, [], true);
    this.splitter = new ReasoningSplitter(thought.openTag, thought.closeTag, plan.thinking.startsInReasoning);
    this.logprobs = plan.logprobs ? [] : null;
    this.seed = (plan.seed + index) >>> 0;
    const dynamic = plan.sampling.dynamicTemperature;
    this.dynamicSampler = dynamic ? new DynamicTemperatureSampler(dynamic.min, dynamic.max, this.seed) : null;
  }

  async run(sequence: LlamaContextSequence, signal?: AbortSignal): Promise<ChoiceOutcome> {
    const { promptTokens } = this.plan;
    // Keep the longest cached prefix (at least one prompt token must be evaluated to get logits).
    const reusable = Math.min(sequence.compareContextTokens(promptTokens).firstDifferentIndex, promptTokens.length - 1);
    if (sequence.nextTokenIndex > reusable) await sequence.eraseContextTokenRanges([{ start: reusable, end: sequence.nextTokenIndex }]);
    const cachedTokens = sequence.nextTokenIndex;

    const startedAt = performance.now();
    let firstTokenAt: number | null = null;
    let finish: FinishReason | null = null;
    const opening = this.start();
    if (opening === null || this.plan.maxTokens <= 0) finish = "length";

    if (finish === null) {
      const { barrier } = this.runtime;
      let input: Token[] = [...promptTokens.slice(cachedTokens), ...opening!];
      let version = this.samplingVersion;
      let iterator = this.evaluate(sequence, input);
      let next: Token[] | undefined;
      let inStep = false;
      try {
        for (;;) {
          if (inStep) await barrier.arrive();
          const { value, done } = inStep ? await barrier.inEngineWhile(iterator.next(next)) : await iterator.next(next);
          if (done) {
            finish = "stop";
            break;
          }
          if (signal?.aborted) {
            finish = "abort";
            break;
          }
          if (!inStep) {
            // From its first token on, the sequence generates one token per step with the others.
            barrier.join();
            inStep = true;
          }
          firstTokenAt ??= performance.now();
          const step = this.step(value);
          if ("finish" in step) {
            finish = step.finish;
            break;
          }
          input = step.evaluate;
          if (this.output.length >= this.plan.maxTokens) {
            // Injected tokens past the limit are never evaluated, so they do not count.
            this.output.length = Math.min(this.output.length, this.plan.maxTokens);
            finish = "length";
            break;
          }
          if (version !== this.samplingVersion) {
            version = this.samplingVersion;
            await iterator.return();
            iterator = this.evaluate(sequence, input);
            next = undefined;
          } else next = input;
        }
      } catch (error) {
        if (signal?.aborted) finish = "abort";
        else {
          // What was generated before the failure still reaches the client, ahead of the error.
          this.releaseHeldDeltas();
          throw new InferenceError(`Inference failed: ${(error as Error).message}`);
        }
      } finally {
        if (inStep) barrier.leave();
        await iterator.return().catch(() => undefined);
      }
    }
    this.flush(finish === "abort");
    this.releaseHeldDeltas();
    const finishReason: FinishReason = finish === "stop" && this.toolCalls.length > 0 ? "tool_calls" : finish!;
    return {
      index: this.index,
      content: this.content,
      reasoning: this.reasoning.length > 0 || this.reasoningTokens > 0 ? this.reasoning : null,
      toolCalls: this.toolCalls,
      finishReason,
      completionTokens: this.output.length,
      reasoningTokens: this.reasoningTokens,
      logprobs: this.logprobs,
      cachedTokens,
      timeToFirstTokenMs: firstTokenAt === null ? null : firstTokenAt - startedAt,
    };
  }

  private evaluate(sequence: LlamaContextSequence, tokens: Token[]) {
    const { sampling, logprobs } = this.plan;
    const grammarPhase = this.grammarState !== undefined;
    const dynamic = this.dynamicSampler !== null && !grammarPhase;
    const options: SequenceEvaluateOptions = {
      // Dynamic temperature resamples at its own temperature from the candidates at temperature 1.
      temperature: dynamic ? 1 : sampling.temperature,
      topK: sampling.topK,
      topP: sampling.topP,
      minP: sampling.minP,
      seed: this.seed,
      grammarEvaluationState: this.grammarState,
      yieldEogToken: true,
      tokenBias: sampling.logitBias?.size ? () => tokenBiasFor(this.runtime.model, sampling.logitBias!) : undefined,
      repeatPenalty: hasRepeatPenalty(sampling)
        ? {
            punishTokens: () => this.output,
            penalty: sampling.repetitionPenalty,
            frequencyPenalty: sampling.frequencyPenalty || undefined,
            presencePenalty: sampling.presencePenalty || undefined,
          }
        : undefined,
    };
    // The full probability map is costly (the whole vocabulary when greedy): ask only when needed.
    const metadata = { confidence: logprobs !== null, probabilities: (logprobs?.top ?? 0) > 0 || dynamic };
    samplerBuffers.samplerStarted(this.runtime.vocabularySize);
    return sequence.evaluateWithMetadata(tokens, metadata, options) as AsyncGenerator<
      { token: Token; confidence?: number; probabilities?: Map<Token, number> },
      void,
      Token[] | undefined
    >;
  }

  /** Sets the first phase; returns the tokens the answer is forced to open with (null: no room). */
  private start(): Token[] | null {
    const { thinking } = this.plan;
    const opening: Token[] = [];
    if (thinking.open && !thinking.startsInReasoning) {
      opening.push(...this.runtime.thought.openTokens);
      this.keepFree(this.runtime.thought.openTokens);
    }
    if (!this.splitter.inReasoning) opening.push(...this.enterAnswer());
    return opening.length > this.plan.maxTokens ? null : opening;
  }

  /** Enters the answer's phase once any thought block is over; returns tokens to inject. */
  private enterAnswer(): Token[] {
    const { answer, tools } = this.plan;
    if (answer.kind === "json") {
      this.enter("json", answer.grammar);
      return [];
    }
    if (answer.kind === "call") {
      const syntax = tools!.syntax;
      if (answer.name === null) {
        this.enter("callName", tools!.nameGrammar);
        return this.keepSilently(syntax.prefixTokens);
      }
      const nameTokens = this.runtime.model.tokenize(answer.name, false);
      const inject = [...syntax.prefixTokens, ...nameTokens, ...syntax.paramsPrefixTokens(answer.name)];
      this.startCall(answer.name);
      this.enter("callArguments", tools!.argumentsGrammar(answer.name));
      return this.keepSilently(inject);
    }
    return [];
  }

  private enter(phase: Phase, grammar?: LlamaGrammar): void {
    const before = this.grammarState;
    this.phase = phase;
    if (phase === "callName") this.raw = new StreamingDetokenizer(this.runtime.model, [], true);
    this.grammarState = grammar ? new LlamaGrammarEvaluationState({ model: this.runtime.model, grammar }) : undefined;
    if (before !== this.grammarState) this.samplingVersion++;
  }

  /** Decides what to do with one sampled token. */
  private step(sampled: { token: Token; confidence?: number; probabilities?: Map<Token, number> }): Step {
    let token = sampled.token;
    if (this.dynamicSampler && this.grammarState === undefined && sampled.probabilities) {
      token = this.dynamicSampler.sample(sampled.probabilities).token;
    }
    const { model } = this.runtime;
    const { tools } = this.plan;
    if (this.plan.userStopTokens.has(token)) return { finish: "stop" };
    const endOfTurn = model.isEogToken(token) || this.plan.stopTokens.has(token);
    const logprob = this.logprobOf(token, sampled);

    switch (this.phase) {
      case "free": {
        if (endOfTurn) return { finish: "stop" };
        if (tools?.detect && token === tools.syntax.trigger) {
          this.flushText();
          this.enter("callName", tools.nameGrammar);
          return { evaluate: this.keepSilently([token, ...tools.syntax.prefixTokens.slice(1)]) };
        }
        if (logprob) this.pendingLogprobs.push(logprob);
        const stopped = this.keepFree([token]);
        if (stopped) return { finish: "stop" };
        const inject: Token[] = [];
        const { budget } = this.plan.thinking;
        if (budget !== null && this.splitter.inReasoning && this.reasoningTokens >= budget) {
          inject.push(...this.runtime.thought.closeTokens);
          this.keepFree(this.runtime.thought.closeTokens);
        }
        if (this.splitter.closed && this.plan.answer.kind !== "text" && this.phase === "free") {
          this.flushText();
          inject.push(...this.enterAnswer());
        }
        return { evaluate: [token, ...inject] };
      }
      case "json": {
        // The grammar lets the turn end only once the JSON is complete.
        if (endOfTurn) return { finish: "stop" };
        this.output.push(token);
        if (logprob) this.pendingLogprobs.push(logprob);
        this.emitContent(this.raw.push(token).delta);
        return { evaluate: [token] };
      }
      case "callName": {
        if (endOfTurn) {
          const name = (this.callName + this.raw.flush()).trim();
          this.startCall(name);
          this.enter("callArguments", tools!.argumentsGrammar(name));
          return { evaluate: this.keepSilently(tools!.syntax.paramsPrefixTokens(name)) };
        }
        this.output.push(token);
        this.callName += this.raw.push(token).delta;
        return { evaluate: [token] };
      }
      case "callArguments": {
        if (endOfTurn) {
          this.emitArguments(this.raw.flush());
          if (!tools!.parallel) return { finish: "stop" };
          this.enter("afterCall");
          return { evaluate: this.keepSilently(tools!.syntax.suffixTokens(this.toolCalls.at(-1)!.name)) };
        }
        this.output.push(token);
        this.emitArguments(this.raw.push(token).delta);
        return { evaluate: [token] };
      }
      case "afterCall": {
        if (token === tools!.syntax.trigger) {
          this.enter("callName", tools!.nameGrammar);
          return { evaluate: this.keepSilently([token, ...tools!.syntax.prefixTokens.slice(1)]) };
        }
        // Only the whitespace between calls may come before another call; anything else ends the turn.
        if (!endOfTurn && model.detokenize([token], false).trim() === "") {
          this.output.push(token);
          return { evaluate: [token] };
        }
        return { finish: "stop" };
      }
    }
  }

  /** Free text (sampled or injected) through stop strings and the thought splitter; true when a stop string ended it. */
  private keepFree(tokens: Token[]): boolean {
    for (const token of tokens) {
      const wasReasoning = this.splitter.inReasoning;
      this.output.push(token);
      const { delta, stopped } = this.text.push(token);
      this.route(this.splitter.push(delta));
      if (wasReasoning || this.splitter.inReasoning) this.reasoningTokens++;
      if (stopped) return true;
    }
    return false;
  }

  /** Injected tokens that are syntax, not output text (a call's opening and separators). */
  private keepSilently(tokens: Token[]): Token[] {
    this.output.push(...tokens);
    return tokens;
  }

  private startCall(name: string): void {
    const call: ToolCall = { id: toolCallId(), name, arguments: "" };
    this.toolCalls.push(call);
    this.raw = new StreamingDetokenizer(this.runtime.model, [], true);
    this.callName = "";
    this.emit({ kind: "toolCallStart", index: this.toolCalls.length - 1, id: call.id, name: call.name });
  }

  private emitArguments(text: string): void {
    if (!text) return;
    this.toolCalls.at(-1)!.arguments += text;
    this.emit({ kind: "toolCallArguments", index: this.toolCalls.length - 1, text });
  }

  private route(pieces: { content: string; reasoning: string }): void {
    if (pieces.reasoning) {
      this.reasoning += pieces.reasoning;
      this.emit({ kind: "reasoning", text: pieces.reasoning });
      // Log probabilities describe the answer; a thought's tokens are not part of it.
      if (!pieces.content) this.pendingLogprobs.length = 0;
    }
    this.emitContent(pieces.content);
  }

  private emitContent(text: string): void {
    if (!text) return;
    this.content += text;
    const logprobs = this.logprobs ? this.pendingLogprobs.splice(0) : undefined;
    if (logprobs) this.logprobs!.push(...logprobs);
    this.emit({ kind: "content", text, logprobs });
  }

  /**
   * Hands a delta to the caller (its SSE write), or holds it until the next decode step is under
   * way: while several sequences generate, the output of one step then overlaps the decode of the
   * next instead of delaying it (StepBarrier.holdsOutput). Deltas leave in order either way.
   */
  private emit(delta: ChatDelta): void {
    if (!this.onDelta) return;
    this.heldDeltas.push(delta);
    if (!this.runtime.barrier.holdsOutput()) this.releaseHeldDeltas();
    else if (!this.heldReleaseScheduled) {
      this.heldReleaseScheduled = true;
      this.runtime.barrier.afterNextStepStarts(this.releaseHeld);
    }
  }

  private releaseHeldDeltas(): void {
    this.heldReleaseScheduled = false;
    if (this.heldDeltas.length === 0) return;
    for (const delta of this.heldDeltas.splice(0)) this.onDelta!(this.index, delta);
  }

  /** Releases held free text (the turn goes on as a call or JSON). */
  private flushText(): void {
    this.route(this.splitter.push(this.text.flush()));
    this.route(this.splitter.flush());
  }

  private flush(aborted: boolean): void {
    if (aborted) return;
    if (this.phase === "free") this.flushText();
    else if (this.phase === "json") this.emitContent(this.raw.flush());
    else if (this.phase === "callArguments") this.emitArguments(this.raw.flush());
  }

  private logprobOf(token: Token, sampled: { token: Token; confidence?: number; probabilities?: Map<Token, number> }): TokenLogprob | null {
    const request = this.plan.logprobs;
    if (!request) return null;
    const probability = sampled.probabilities?.get(token) ?? (token === sampled.token ? sampled.confidence : undefined) ?? 0;
    return tokenLogprob(this.runtime.describer, token, probability, sampled.probabilities, request.top);
  }
}

/** One token's log probability with the `top` most likely alternatives from the distribution it was drawn from. */
export function tokenLogprob(describer: TokenDescriber, token: Token, probability: number, probabilities: Map<Token, number> | undefined, top: number): TokenLogprob {
  const alternatives: TokenLogprob["top"] = [];
  if (top > 0 && probabilities) {
    for (const [candidate, p] of probabilities) {
      if (alternatives.length >= top) break;
      const { text, bytes } = describer.describe(candidate);
      alternatives.push({ token: text, logprob: toLogprob(p), bytes });
    }
  }
  const { text, bytes } = describer.describe(token);
  return { token: text, logprob: toLogprob(probability), bytes, top: alternatives };
}

/** ln p, with the standard's -9999 standing in for an impossible token (JSON has no -Infinity). */
function toLogprob(p: number): number {
  return p > 0 ? Math.max(Math.log(p), -9999) : -9999;
}

function hasRepeatPenalty(s: SamplingOptions): boolean {
  return (s.repetitionPenalty !== undefined && s.repetitionPenalty !== 1) || !!s.frequencyPenalty || !!s.presencePenalty;
}

const ID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** `call_` and 24 random letters and digits, the standard's look. */
export function toolCallId(): string {
  let id = "call_";
  for (let i = 0; i < 24; i++) id += ID_ALPHABET[randomInt(ID_ALPHABET.length)];
  return id;
}
