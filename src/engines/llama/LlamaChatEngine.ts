import { availableParallelism } from "node:os";
import { randomInt } from "node:crypto";
import {
  isLlamaText,
  LlamaGrammar,
  LlamaText,
  SpecialTokensText,
  type ChatHistoryItem,
  type ChatModelFunctionCall,
  type ChatModelFunctions,
  type ChatModelResponse,
  type ChatWrapper,
  type ControlledEvaluateInputItem,
  type LlamaContext,
  type LlamaContextSequence,
  type LlamaModel,
  type Token,
} from "node-llama-cpp";
import type { LlamaSettings } from "../../config/backendSettings.js";
import { chunksAtWhitespace, CooperativeSlicer } from "../cooperativeWork.js";
import { InferenceError } from "../../errors.js";
import { PlanRefusalError, type PlanRefusal } from "../PlanRefusal.js";
import type {
  ChatEngine,
  ChatFeatures,
  ChatGenerateOptions,
  ChatGenerateResult,
  ChatMessage,
  CompleteOptions,
  CompleteResult,
  CompletionCall,
  CompletionPrompt,
  EchoedPrompt,
  FunctionDefinition,
  GenerationCall,
  MemoryEstimate,
  PlannedChat,
  PlannedCompletion,
  TemplateCosts,
  TemplateTokens,
} from "../types.js";
import { ChatSyntax } from "./ChatSyntax.js";
import { chatWrapperFor, chatWrapperKindEarly } from "./chatWrapperCache.js";
import { ChoiceGeneration, tokenLogprob, type ChoiceOutcome, type GenerationPlan, type ToolPlan } from "./ChoiceGeneration.js";
import { chatContextOptions, getSharedLlama, skipsMemorySafetyChecks } from "./getSharedLlama.js";
import { jsonGrammar, literal } from "./jsonGrammar.js";
import { longestTokenBytes } from "./longestTokenBytes.js";
import { DecodeBatches } from "./decodeBatches.js";
import { llamaMemoryInUse } from "./llamaMemoryInUse.js";
import { samplerBuffers } from "./SamplerBufferCollector.js";
import { SequencePool } from "./SequencePool.js";
import { threadsForBatch } from "./threadsForBatch.js";
import { StepBarrier, overlapsOutputWithDecode } from "./StepBarrier.js";
import { passToolResultsAsText, templateDefaultSystemPrompt } from "./templateFidelity.js";
import { TokenDescriber } from "./TokenDescriber.js";
import { TokenizationCache } from "./TokenizationCache.js";

/** Characters tokenized in one slice while measuring long text (a few milliseconds). */
const COUNT_CHUNK_CHARS = 8192;
/** Tokens a cut between two chunks may add over the whole text's count. */
const TOKENS_PER_CUT = 2;

export interface LlamaChatEngineOptions {
  modelId: string;
  file: string;
  settings: LlamaSettings;
  maxWaiting: number;
  gpu?: "auto" | false;
}

/** Where Hearth departs from the resolved chat wrapper to render as the model's template does (templateFidelity.ts). */
export interface PromptRendering {
  /** Added when a conversation does not start with a system message. */
  defaultSystemPrompt: string | null;
  /** Tool messages' content as sent, not parsed from JSON. */
  toolResultsAsText: boolean;
}

export function promptRenderingFor(chatWrapper: ChatWrapper, model: LlamaModel): PromptRendering {
  return { defaultSystemPrompt: templateDefaultSystemPrompt(chatWrapper, templateOf(model), model.tokenizer), toolResultsAsText: passToolResultsAsText(chatWrapper) };
}

/**
 * The chat history the wrapper renders for a request: its messages, the template's default system
 * message where it has one and the conversation none, and an open model turn to generate in unless
 * the model's turn goes on after tool results already.
 */
export function promptHistory(messages: readonly ChatMessage[], rendering: PromptRendering, endWithModelTurn = true): ChatHistoryItem[] {
  const history = toChatHistory(messages, { toolResultsAsText: rendering.toolResultsAsText });
  if (rendering.defaultSystemPrompt !== null && history[0]?.type !== "system") history.unshift({ type: "system", text: rendering.defaultSystemPrompt });
  if (!endWithModelTurn) return history;
  const last = history.at(-1);
  if (last?.type === "model" && continuesAfterToolResults(last)) {
    // The turn goes on after its tool results; node-llama-cpp would now show its thought as the
    // last one, which the templates Hearth is tested against do not (and Hearth dropped before).
    last.response = last.response.filter((item) => typeof item === "string" || item.type !== "segment" || item.segmentType !== "thought");
  } else history.push({ type: "model", response: [] });
  return history;
}

/**
 * Chat on a GGUF model through node-llama-cpp. One context with N sequences serves
 * concurrent requests (and the `n` choices of one request); the prompt is rendered by the
 * chat wrapper resolved once from the model's own template; generation is Hearth's own
 * token loop (ChoiceGeneration), so streaming, stop handling, log probabilities, thought
 * blocks, JSON grammars and tool calls share one path.
 */
export class LlamaChatEngine implements ChatEngine {
  readonly kind = "chat" as const;
  readonly router: string;
  readonly features: ChatFeatures;
  private readonly describer: TokenDescriber;
  /** The model's tokenizer, remembering long prompt pieces (system prompts, tools, earlier turns). */
  private readonly tokenization: TokenizationCache;
  private constructor(
    private readonly barrier: StepBarrier,
    private readonly modelId: string,
    private readonly model: LlamaModel,
    file: string,
    private readonly context: LlamaContext,
    private readonly chatWrapper: ChatWrapper,
    private readonly rendering: PromptRendering,
    private readonly syntax: ChatSyntax,
    private readonly pool: SequencePool,
    private readonly decodeBatches: DecodeBatches,
    gpu: string | false,
    longestBytes: number | undefined,
  ) {
    this.router = `llama.cpp/${gpu || "cpu"}`;
    this.describer = new TokenDescriber(model);
    this.tokenization = new TokenizationCache(model.tokenizer);
    this.features = {
      functionCalling: syntax.toolCall !== null,
      reasoning: syntax.features.reasoning,
      reasoningToggle: syntax.features.reasoningToggle,
      responseSchema: true,
      logprobs: true,
      dynamicTemperature: true,
      maxChoices: pool.total,
      vocabularySize: model.fileInfo.metadata.tokenizer?.ggml?.tokens?.length ?? 0,
      infill: model.tokens.infill.prefix !== null && model.tokens.infill.suffix !== null && model.tokens.infill.middle !== null,
    };
    this.maxPromptChars = longestBytes === undefined ? undefined : context.contextSize * longestBytes;
    this.templateTokens = this.measureTemplateTokens();
    this.tokenizeScaffoldingInPieces();
    // A raw prompt may spell any special token of the vocabulary, any text its user-defined ones.
    this.tokenization.allowVocabularyCuts(model, file, ["special", "plain"]);
  }

  /**
   * The template's scaffolding around many short messages is one long special-token text, which
   * llama.cpp tokenizes in time quadratic in its length (TokenizationCache.allowCuts).
   * The special tokens it cuts at are the ones the template writes; a rendering of 200 empty
   * messages checks that cutting there changes no token.
   */
  private tokenizeScaffoldingInPieces(): void {
    try {
      const messages = Array.from({ length: 200 }, (_, i): ChatMessage => ({ role: i % 2 === 0 ? "user" : "assistant", content: "" }));
      const rendered = this.chatWrapper.generateContextState({ chatHistory: promptHistory(messages, this.rendering) }).contextText;
      const scaffolding = rendered.values.filter((value): value is SpecialTokensText => value instanceof SpecialTokensText).map((value) => value.value);
      const sample = scaffolding.reduce((longest, text) => (text.length > longest.length ? text : longest), "");
      const tokenizer = this.model.tokenizer;
      const markers = new Set(
        tokenizer(sample, true)
          .filter((token) => tokenizer.isSpecialToken(token))
          .map((token) => tokenizer.detokenize([token], true)),
      );
      this.tokenization.allowCuts("special", [...markers], sample);
    } catch {
      // A template that cannot render the sample: special text is tokenized whole, as before.
    }
  }

  /** The special tokens long text is cut after before llama.cpp tokenizes it (tests, diagnostics). */
  tokenizationCuts(): { special: string[]; plain: string[] } {
    return this.tokenization.cutMarkers();
  }

  readonly maxPromptChars: number | undefined;
  readonly templateTokens: TemplateTokens;

  /**
   * What the template writes around messages besides their content: a user message merged into
   * the one before it ([user, user] over [user]), and an exchange, an assistant turn with the
   * user turn after it ([user, assistant, user] over [user]); for empty messages and for
   * messages of one short word. 0 where it cannot render them (some templates insist that roles
   * alternate).
   */
  private measureTemplateTokens(): TemplateTokens {
    const word = "a";
    const wordTokens = this.model.tokenize(word, false).length;
    const costs = (content: string): TemplateCosts => {
      const tokens = (roles: readonly ("user" | "assistant")[]) => this.renderPrompt(roles.map((role): ChatMessage => ({ role, content }))).tokens.length;
      const own = content === "" ? 0 : wordTokens;
      const measured = (measure: () => number) => {
        try {
          return Math.max(0, measure());
        } catch {
          return 0;
        }
      };
      return {
        perMessage: measured(() => tokens(["user", "user"]) - tokens(["user"]) - own),
        perExchange: measured(() => tokens(["user", "assistant", "user"]) - tokens(["user"]) - 2 * own),
      };
    };
    return { empty: costs(""), withContent: costs(word) };
  }

  async countTokensAtLeast(texts: readonly string[], stopAbove: number): Promise<number> {
    const slicer = new CooperativeSlicer();
    let total = 0;
    for (const text of texts) {
      for (const chunk of chunksAtWhitespace(text, COUNT_CHUNK_CHARS)) {
        // Cut before whitespace, where the pre-tokenizer splits words anyway; a cut may still
        // cost a token or two the whole text would not have (a leading-space marker, a split run).
        total += Math.max(0, this.model.tokenize(chunk, false).length - TOKENS_PER_CUT);
        if (total > stopAbove) return total;
        await slicer.pause();
      }
    }
    return total;
  }

  static async load(options: LlamaChatEngineOptions): Promise<LlamaChatEngine> {
    const llama = await getSharedLlama(options.gpu);
    const { settings } = options;
    const ignoreMemorySafetyChecks = skipsMemorySafetyChecks(llama);
    // A template Hearth does not know is resolved in a child process while the model loads.
    const wrapperKind = chatWrapperKindEarly(options.file);
    const model = await llama.loadModel({ modelPath: options.file, gpuLayers: settings.gpuLayers, ignoreMemorySafetyChecks });
    try {
      const decodeBatches = new DecodeBatches();
      const barrier = new StepBarrier();
      // The vocabulary is read on this thread while llama.cpp creates the context on another.
      const [context, longestBytes] = await Promise.all([
        model.createContext({
          ...chatContextOptions(settings),
          ignoreMemorySafetyChecks,
          batching: {
            itemPrioritizationStrategy: decodeBatches.strategy,
            threadsForBatch: threadsForBatch(settings.singleTokenThreads),
            dispatchSchedule: barrier.dispatchSchedule,
          },
        }),
        longestTokenBytes(model),
      ]);
      barrier.setOverlapOutput(
        settings.overlapOutput === "auto"
          ? overlapsOutputWithDecode({ gpuLayers: model.gpuLayers, totalLayers: model.fileInsights.totalLayers, threads: context.currentThreads, cores: availableParallelism() })
          : settings.overlapOutput,
      );
      // Resolving the wrapper renders the Jinja template: once per model file, not per request or reload.
      const chatWrapper = await chatWrapperFor(options.file, model, wrapperKind);
      const rendering = promptRenderingFor(chatWrapper, model);
      const syntax = ChatSyntax.from(chatWrapper, model);
      const pool = new SequencePool(context, options.modelId, options.maxWaiting);
      return new LlamaChatEngine(barrier, options.modelId, model, options.file, context, chatWrapper, rendering, syntax, pool, decodeBatches, llama.gpu, longestBytes);
    } catch (error) {
      await model.dispose();
      throw error;
    }
  }

  /** node-llama-cpp's name for the chat wrapper rendering this model's prompts ("JinjaTemplate" when the template renders them itself). */
  get chatWrapperName(): string {
    return this.chatWrapper.wrapperName;
  }

  /** The GGUF's own Jinja chat template, if it has one. */
  get templateSource(): string | undefined {
    return templateOf(this.model);
  }

  get contextSize(): number {
    return this.context.contextSize;
  }

  stats() {
    return { ...this.pool.stats(), decode: { ...this.decodeBatches.stats(), ...this.barrier.stats() } };
  }

  /** Renders the conversation with the model's template (and the callable functions) and tokenizes it. */
  renderPrompt(messages: readonly ChatMessage[], functions?: readonly FunctionDefinition[], endWithModelTurn = true) {
    const chatHistory = promptHistory(messages, this.rendering, endWithModelTurn);
    const state = this.chatWrapper.generateContextState({ chatHistory, availableFunctions: toAvailableFunctions(functions) });
    const tokens = state.contextText.tokenize(this.tokenization.tokenize);
    const stopStrings: string[] = [];
    const stopTokens = new Set<Token>();
    for (const trigger of state.stopGenerationTriggers) {
      const text = isLlamaText(trigger) ? trigger : LlamaText(trigger);
      if (text.values.every((value) => typeof value === "string")) stopStrings.push(text.values.join(""));
      else {
        const triggerTokens = text.tokenize(this.model.tokenizer, "trimLeadingSpace");
        if (triggerTokens.length === 1) stopTokens.add(triggerTokens[0]!);
      }
    }
    return { tokens, text: state.contextText.toString(), stopStrings: stopStrings.filter((s) => s.length > 0), stopTokens };
  }

  /** Renders and measures a chat request; running it takes sequences and generates every choice. */
  plan(options: ChatGenerateOptions): PlannedChat {
    const { plan, pinnedTokens } = this.generationPlan(options);
    const count = options.choices ?? 1;
    return {
      promptTokens: plan.promptTokens.length,
      maxTokens: plan.maxTokens * count,
      choices: count,
      generate: async (call) => toResult([await this.run(plan, count, { pinnedTokens, cacheKey: options.cache?.key, ...call })]),
    };
  }

  /**
   * Raw-text completion: each prompt is tokenized as it is (no chat template), or built from
   * the model's FIM tokens around `suffix`; the choices run through the same token loop as chat.
   */
  planCompletion(options: CompleteOptions): PlannedCompletion {
    const count = options.choices ?? 1;
    const prompts = options.prompts.map((prompt, index) => this.completionPrompt(prompt, options.suffix, options.prompts.length > 1 ? index : null));
    const over = prompts.findIndex((p) => p.length >= this.contextSize);
    if (over >= 0) {
      throw this.refuse({ kind: "promptTooLong", prompt: prompts.length > 1 ? over : null, promptTokens: prompts[over]!.length, contextSize: this.contextSize });
    }
    const plans = prompts.map((promptTokens) => {
      const room = this.contextSize - promptTokens.length;
      const plan: GenerationPlan = {
        promptTokens,
        stopStrings: options.stop ?? [],
        stopTokens: new Set(),
        userStopTokens: new Set(),
        maxTokens: Math.min(options.maxTokens ?? room, room),
        sampling: options.sampling,
        seed: options.sampling.seed ?? randomInt(2 ** 31),
        logprobs: options.logprobs ?? null,
        answer: { kind: "text" },
        tools: null,
        thinking: { startsInReasoning: false, open: false, budget: null },
      };
      return plan;
    });
    return {
      promptTokens: sum(prompts.map((p) => p.length)),
      maxTokens: sum(plans.map((p) => p.maxTokens)) * count,
      choices: count * prompts.length,
      generate: (call) => this.runCompletion(options, plans, count, call),
    };
  }

  private async runCompletion(options: CompleteOptions, plans: GenerationPlan[], count: number, call: CompletionCall): Promise<CompleteResult> {
    let started = 0;
    const onStart = () => {
      if (++started === plans.length) call.onStart?.();
    };
    const onDelta = call.onDelta as GenerationCall["onDelta"];
    // One prompt failing (its wait for sequences refused, say) stops the others: no unbilled work goes on.
    const failed = new AbortController();
    const signal = call.signal ? AbortSignal.any([call.signal, failed.signal]) : failed.signal;
    const settled = await Promise.allSettled(
      plans.map((plan, p) =>
        this.run(plan, count, {
          pinnedTokens: 0,
          signal,
          onStart,
          onDelta: onDelta && ((choice, delta) => onDelta(p * count + choice, delta)),
          indexOffset: p * count,
          echo: options.echo
            ? { prompt: options.prompts[p]!, logprobs: options.echoLogprobs === false ? undefined : options.logprobs, onEcho: (echoed) => call.onEcho?.(p, echoed) }
            : undefined,
        }).catch((error: unknown) => {
          failed.abort(error);
          throw error;
        }),
      ),
    );
    const rejected = settled.find((s) => s.status === "rejected");
    if (rejected) throw (rejected as PromiseRejectedResult).reason;
    const runs = settled.map((s) => (s as PromiseFulfilledResult<Run>).value);
    const result: CompleteResult = toResult(runs);
    if (options.echo) result.echoed = runs.map((run) => run.echoed!);
    return result;
  }

  private refuse(refusal: PlanRefusal): PlanRefusalError {
    return new PlanRefusalError(refusal, this.modelId);
  }

  /** A completion prompt's tokens: the text as it is, or the FIM layout around the suffix. */
  private completionPrompt(prompt: CompletionPrompt, suffix: string | undefined, index: number | null): Token[] {
    let tokens: Token[];
    // A raw prompt may spell special tokens (an editor's own FIM or chat layout), as llama-server and
    // vLLM read them; FIM parts are code, read as plain text.
    if (typeof prompt === "string") tokens = this.tokenization.tokenizeRaw(prompt, suffix === undefined);
    else {
      const vocabulary = this.features.vocabularySize;
      for (const [position, id] of prompt.entries()) {
        if (!Number.isInteger(id) || id < 0 || id >= vocabulary) throw this.refuse({ kind: "tokenOutsideVocabulary", prompt: index, position, id, vocabularySize: vocabulary });
      }
      tokens = prompt as Token[];
    }
    const bos = this.model.tokens.shouldPrependBosToken ? this.model.tokens.bos : null;
    if (suffix === undefined) {
      if (bos !== null && tokens[0] !== bos) return [bos, ...tokens];
      if (tokens.length > 0) return tokens;
      // An empty prompt starts from the beginning-of-sequence token, when the model has one.
      const start = this.model.tokens.bos;
      if (start === null) throw this.refuse({ kind: "emptyPrompt", prompt: index });
      return [start];
    }
    const { prefix: pre, suffix: suf, middle: mid } = this.model.tokens.infill;
    if (pre === null || suf === null || mid === null) throw this.refuse({ kind: "noInfillTokens" });
    // Prefix-suffix-middle order, as llama.cpp's infill and node-llama-cpp's LlamaCompletion build it.
    const suffixTokens = this.tokenization.tokenizeRaw(suffix, false);
    return [...(bos !== null ? [bos] : []), pre, ...tokens, suf, ...suffixTokens, mid];
  }

  /** Takes `count` sequences for one plan and runs its choices on them. */
  private async run(plan: GenerationPlan, count: number, call: RunCall): Promise<Run> {
    const queuedAt = performance.now();
    const sequences = await this.pool.acquire({ prompt: plan.promptTokens, count, cacheKey: call.cacheKey, signal: call.signal });
    const queueMs = performance.now() - queuedAt;
    const runtime = { model: this.model, thought: this.syntax.thought, describer: this.describer, barrier: this.barrier, vocabularySize: this.features.vocabularySize };
    let settled: PromiseSettledResult<ChoiceOutcome>[];
    let echoed: EchoedPrompt | undefined;
    try {
      if (call.echo) {
        const { prompt, logprobs, onEcho } = call.echo;
        const text = typeof prompt === "string" ? prompt : this.model.detokenize(prompt as Token[], false);
        echoed = { text, tokens: logprobs ? await this.promptLogprobs(sequences[0]!, plan.promptTokens, logprobs.top) : null };
        onEcho(echoed);
      }
      call.onStart?.();
      settled = await Promise.allSettled(sequences.map((sequence, index) => new ChoiceGeneration(runtime, plan, index, call.onDelta).run(sequence, call.signal)));
    } finally {
      for (const sequence of sequences) this.pool.release(sequence, { cacheKey: call.cacheKey, pinnedTokens: call.pinnedTokens });
    }
    const failed = settled.find((s) => s.status === "rejected");
    if (failed) throw (failed as PromiseRejectedResult).reason;
    const choices = settled.map((s) => (s as PromiseFulfilledResult<ChoiceOutcome>).value);
    for (const choice of choices) choice.index += call.indexOffset ?? 0;
    // The echoed prompt's log probabilities were read by evaluating it afresh: none of it came from the cache.
    if (echoed?.tokens) choices[0]!.cachedTokens = 0;
    return { choices, promptTokens: plan.promptTokens.length, queueMs, echoed };
  }

  /**
   * The prompt's own log probabilities (echo with logprobs): the prompt is evaluated on the
   * sequence with the next-token distribution kept at every position, which also leaves it
   * cached there for the generation that follows. The first token has none (null).
   */
  private async promptLogprobs(sequence: LlamaContextSequence, tokens: Token[], top: number): Promise<NonNullable<EchoedPrompt["tokens"]>> {
    if (sequence.nextTokenIndex > 0) await sequence.eraseContextTokenRanges([{ start: 0, end: sequence.nextTokenIndex }]);
    // The last prompt token is left to the generation, which needs to evaluate at least one.
    const evaluated = tokens.slice(0, -1);
    samplerBuffers.samplerStarted(this.features.vocabularySize);
    const outputs = await sequence.controlledEvaluate(evaluated.map((token): ControlledEvaluateInputItem => [token, { generateNext: { probabilities: true } }]));
    const first = this.describer.describe(tokens[0]!);
    const entries: NonNullable<EchoedPrompt["tokens"]> = [{ token: first.text, logprob: null, top: [] }];
    for (let i = 1; i < tokens.length; i++) {
      const probabilities = outputs[i - 1]?.next.probabilities;
      entries.push(tokenLogprob(this.describer, tokens[i]!, probabilities?.get(tokens[i]!) ?? 0, probabilities, top));
    }
    return entries;
  }

  /**
   * Turns the request into a generation plan: prompt, stops, grammars, thinking, limits. The
   * service has checked what the features say (tools only where there is tool-call syntax,
   * `n` within the sequences, stop token ids within the vocabulary).
   */
  private generationPlan(options: ChatGenerateOptions): { plan: GenerationPlan; pinnedTokens: number } {
    const { tools, responseFormat } = options;
    const toolsActive = tools !== undefined && tools.functions.length > 0 && tools.choice !== "none";
    const functions = toolsActive ? tools.functions : undefined;
    const prompt = this.renderPrompt(options.messages, functions);

    const forcedCall = toolsActive && tools.choice !== "auto";
    const answer: GenerationPlan["answer"] = forcedCall
      ? { kind: "call", name: typeof tools.choice === "object" ? tools.choice.name : null }
      : responseFormat
        ? { kind: "json", grammar: this.grammar(jsonGrammar(responseFormat.type === "json_schema" ? responseFormat.schema : ANY_OBJECT)) }
        : { kind: "text" };

    const thought = this.syntax.thought;
    const requested = options.reasoning?.mode ?? "auto";
    const thinks = this.features.reasoning;
    // A JSON or call answer cannot hold a thought block; unless thinking was asked for, switch it off up front.
    const mode = requested === "auto" && answer.kind !== "text" && this.features.reasoningToggle ? "off" : requested;
    const promptTokens = mode === "off" && this.features.reasoningToggle ? [...prompt.tokens, ...thought.disabledTokens] : prompt.tokens;
    const startsInReasoning = thinks && thought.openedByTemplate && mode !== "off";

    if (promptTokens.length >= this.contextSize) {
      throw this.refuse({ kind: "promptTooLong", prompt: null, promptTokens: promptTokens.length, contextSize: this.contextSize });
    }
    const room = this.contextSize - promptTokens.length;
    const maxTokens = Math.min(options.maxTokens ?? room, room);
    const share = options.reasoning?.budgetShare;
    const budget = thinks && mode === "on" && share !== undefined && share < 1 ? Math.max(1, Math.floor(share * maxTokens)) : null;
    const plan: GenerationPlan = {
      promptTokens,
      stopStrings: [...(options.stop ?? []), ...prompt.stopStrings],
      stopTokens: prompt.stopTokens,
      userStopTokens: new Set((options.stopTokenIds ?? []) as Token[]),
      maxTokens,
      sampling: options.sampling,
      seed: options.sampling.seed ?? randomInt(2 ** 31),
      logprobs: options.logprobs ?? null,
      answer,
      tools: toolsActive ? this.toolPlan(tools.functions, tools.choice === "auto", tools.parallel) : null,
      thinking: {
        startsInReasoning,
        open: thinks && mode === "on" && !startsInReasoning,
        budget,
      },
    };
    return { plan, pinnedTokens: this.pinnedPrefix(options, promptTokens, functions) };
  }

  private toolPlan(functions: FunctionDefinition[], detect: boolean, parallel: boolean): ToolPlan {
    const syntax = this.syntax.toolCall!;
    const argumentGrammars = new Map<string, LlamaGrammar>();
    return {
      syntax,
      nameGrammar: this.grammar(`root ::= ${functions.map((f) => literal(f.name)).join(" | ")}`),
      argumentsGrammar: (name) => {
        let grammar = argumentGrammars.get(name);
        if (!grammar) {
          const definition = functions.find((f) => f.name === name);
          if (!definition) throw new InferenceError(`the model called an unknown function "${name}"`);
          grammar = this.grammar(jsonGrammar(definition.parameters));
          argumentGrammars.set(name, grammar);
        }
        return grammar;
      },
      detect: detect && syntax.trigger !== null,
      parallel,
    };
  }

  private grammar(gbnf: string): LlamaGrammar {
    try {
      return new LlamaGrammar(this.model.llama, { grammar: gbnf });
    } catch (error) {
      throw new InferenceError(`Could not build the output grammar: ${(error as Error).message}`);
    }
  }

  /**
   * How many leading prompt tokens are worth keeping in the sequence after this request:
   * up to the last cache breakpoint (cache_control) or, without one, the system prompt
   * (cached automatically). Found by rendering the conversation up to there.
   */
  private pinnedPrefix(options: ChatGenerateOptions, promptTokens: Token[], functions?: FunctionDefinition[]): number {
    const leadingSystem = options.messages.findIndex((m) => m.role !== "system") - 1;
    const last = Math.max(options.cache?.breakpointMessage ?? -1, leadingSystem === -2 ? options.messages.length - 1 : leadingSystem);
    if (last < 0) return 0;
    try {
      const { tokens } = this.renderPrompt(options.messages.slice(0, last + 1), functions, false);
      let shared = 0;
      while (shared < tokens.length && shared < promptTokens.length && tokens[shared] === promptTokens[shared]) shared++;
      return shared;
    } catch {
      return 0;
    }
  }

  memoryInUse(): MemoryEstimate {
    return llamaMemoryInUse(this.model, [this.context]);
  }

  async dispose(): Promise<void> {
    this.pool.rejectWaiters(new InferenceError(`The model "${this.modelId}" is shutting down`));
    await this.context.dispose();
    await this.model.dispose();
  }
}

const ANY_OBJECT = { root: { kind: "object" as const, properties: [], open: true }, defs: {} };

interface RunCall extends GenerationCall {
  pinnedTokens: number;
  cacheKey?: string;
  /** Choice indexes of this run start here (a completion's later prompts). */
  indexOffset?: number;
  /** Echo the prompt (with its tokens' log probabilities when asked) before generating. */
  echo?: { prompt: CompletionPrompt; logprobs?: { top: number }; onEcho: (echoed: EchoedPrompt) => void };
}

interface Run {
  choices: ChoiceOutcome[];
  promptTokens: number;
  queueMs: number;
  echoed: EchoedPrompt | undefined;
}

/** One request's runs (a chat: one; a completion: one per prompt) as the engine's result. */
function toResult(runs: Run[]): ChatGenerateResult {
  const choices = runs.flatMap((run) => run.choices);
  const first = choices[0]!;
  const aborted = choices.some((c) => c.finishReason === "abort");
  const promptTokens = sum(runs.map((run) => run.promptTokens));
  // Each prompt is counted once, as its first choice's sequence read and wrote it.
  const cachedTokens = sum(runs.map((run) => run.choices[0]!.cachedTokens));
  return {
    choices: choices.map(({ cachedTokens: _cached, timeToFirstTokenMs: _ttft, ...choice }) => choice),
    finishReason: aborted ? "abort" : first.finishReason,
    promptTokens,
    completionTokens: sum(choices.map((c) => c.completionTokens)),
    reasoningTokens: sum(choices.map((c) => c.reasoningTokens)),
    cachedTokens,
    cacheWriteTokens: promptTokens - cachedTokens,
    queueMs: Math.max(...runs.map((run) => run.queueMs)),
    timeToFirstTokenMs: first.timeToFirstTokenMs,
  };
}

function sum(values: number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

function toAvailableFunctions(functions?: readonly FunctionDefinition[]): ChatModelFunctions | undefined {
  if (!functions || functions.length === 0) return undefined;
  return Object.fromEntries(functions.map((f) => [f.name, { description: f.description, params: f.parametersSchema as never }]));
}

/** The standard's messages as node-llama-cpp chat history; tool results attach to the call they answer. */
function toChatHistory(messages: readonly ChatMessage[], options: { toolResultsAsText: boolean }): ChatHistoryItem[] {
  const history: ChatHistoryItem[] = [];
  const callsById = new Map<string, ChatModelFunctionCall>();
  for (const message of messages) {
    switch (message.role) {
      case "system":
        history.push({ type: "system", text: message.content });
        break;
      case "user":
        history.push({ type: "user", text: message.content });
        break;
      case "assistant": {
        const response: ChatModelResponse["response"] = [];
        // The thought travels with the message so templates that show earlier thinking can.
        if (message.reasoning) response.push({ type: "segment", segmentType: "thought", text: message.reasoning, ended: true });
        if (message.content) response.push(message.content);
        for (const call of message.toolCalls ?? []) {
          const functionCall: ChatModelFunctionCall = { type: "functionCall", name: call.name, params: parseJsonOr(call.arguments), result: undefined };
          callsById.set(call.id, functionCall);
          response.push(functionCall);
        }
        history.push({ type: "model", response });
        break;
      }
      case "tool": {
        const call = callsById.get(message.toolCallId);
        if (call) call.result = options.toolResultsAsText ? message.content : parseJsonOr(message.content);
        else history.push({ type: "user", text: message.content });
        break;
      }
    }
  }
  return history;
}

/**
 * Whether a model turn ends with its tool calls and their results: the turn then goes on after
 * the results (node-llama-cpp renders a call's result inside the model's response and opens the
 * next assistant segment itself), so no new turn is added. Before, Hearth added one, and the model
 * saw an empty assistant message before its own.
 */
function continuesAfterToolResults(turn: ChatModelResponse): boolean {
  const final = turn.response.at(-1);
  return typeof final === "object" && final.type === "functionCall" && final.result !== undefined;
}

function parseJsonOr(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function templateOf(model: LlamaModel): string | undefined {
  const template = model.fileInfo.metadata.tokenizer?.chat_template;
  return typeof template === "string" ? template : undefined;
}
