import { randomInt } from "node:crypto";
import {
  isLlamaText,
  LlamaGrammar,
  LlamaText,
  resolveChatWrapper,
  type ChatHistoryItem,
  type ChatModelFunctionCall,
  type ChatModelFunctions,
  type ChatModelResponse,
  type ChatWrapper,
  type LlamaContext,
  type LlamaModel,
  type Token,
} from "node-llama-cpp";
import type { LlamaSettings } from "../../config.js";
import { chunksAtWhitespace, CooperativeSlicer } from "../cooperativeWork.js";
import { InferenceError, InvalidRequestError } from "../../errors.js";
import type { ChatEngine, ChatFeatures, ChatGenerateOptions, ChatGenerateResult, ChatMessage, FunctionDefinition } from "../types.js";
import { ChatSyntax } from "./ChatSyntax.js";
import { ChoiceGeneration, type ChoiceOutcome, type GenerationPlan, type ToolPlan } from "./ChoiceGeneration.js";
import { chatContextOptions, getSharedLlama } from "./getSharedLlama.js";
import { jsonGrammar, literal } from "./jsonGrammar.js";
import { longestTokenBytes } from "./longestTokenBytes.js";
import { SequencePool } from "./SequencePool.js";
import { TokenDescriber } from "./TokenDescriber.js";

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

  private constructor(
    private readonly modelId: string,
    private readonly model: LlamaModel,
    private readonly context: LlamaContext,
    private readonly chatWrapper: ChatWrapper,
    private readonly syntax: ChatSyntax,
    private readonly pool: SequencePool,
    gpu: string | false,
  ) {
    this.router = `llama.cpp/${gpu || "cpu"}`;
    this.describer = new TokenDescriber(model);
    this.features = {
      functionCalling: syntax.toolCall !== null,
      reasoning: syntax.features.reasoning,
      reasoningToggle: syntax.features.reasoningToggle,
      responseSchema: true,
      logprobs: true,
      dynamicTemperature: true,
      maxChoices: pool.total,
      vocabularySize: model.fileInfo.metadata.tokenizer?.ggml?.tokens?.length ?? 0,
    };
    const longest = longestTokenBytes(model);
    this.maxPromptChars = longest === undefined ? undefined : context.contextSize * longest;
  }

  readonly maxPromptChars: number | undefined;

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
    const model = await llama.loadModel({ modelPath: options.file, gpuLayers: settings.gpuLayers });
    try {
      const context = await model.createContext(chatContextOptions(settings));
      // Resolving the wrapper parses the Jinja template: do it once per model, not per request.
      const chatWrapper = resolveChatWrapper(model);
      const syntax = ChatSyntax.from(chatWrapper, model);
      const pool = new SequencePool(context, options.modelId, options.maxWaiting);
      return new LlamaChatEngine(options.modelId, model, context, chatWrapper, syntax, pool, llama.gpu);
    } catch (error) {
      await model.dispose();
      throw error;
    }
  }

  get contextSize(): number {
    return this.context.contextSize;
  }

  stats() {
    return this.pool.stats();
  }

  /** Renders the conversation with the model's template (and the callable functions) and tokenizes it. */
  renderPrompt(messages: readonly ChatMessage[], functions?: readonly FunctionDefinition[], endWithModelTurn = true) {
    const chatHistory: ChatHistoryItem[] = toChatHistory(messages);
    if (endWithModelTurn) chatHistory.push({ type: "model", response: [] });
    const state = this.chatWrapper.generateContextState({ chatHistory, availableFunctions: toAvailableFunctions(functions) });
    const tokens = state.contextText.tokenize(this.model.tokenizer);
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

  async generate(options: ChatGenerateOptions): Promise<ChatGenerateResult> {
    const { plan, pinnedTokens } = this.plan(options);
    const count = options.choices ?? 1;
    if (count > this.pool.total) {
      throw InvalidRequestError.forField(["n"], `this model generates at most ${this.pool.total} choices at once`);
    }
    const queuedAt = performance.now();
    const sequences = await this.pool.acquire({ prompt: plan.promptTokens, count, cacheKey: options.cache?.key, signal: options.signal });
    const queueMs = performance.now() - queuedAt;
    options.onStart?.();
    const runtime = { model: this.model, thought: this.syntax.thought, describer: this.describer };
    let settled: PromiseSettledResult<ChoiceOutcome>[];
    try {
      settled = await Promise.allSettled(sequences.map((sequence, index) => new ChoiceGeneration(runtime, plan, index, options.onDelta).run(sequence, options.signal)));
    } finally {
      for (const sequence of sequences) this.pool.release(sequence, { cacheKey: options.cache?.key, pinnedTokens });
    }
    const failed = settled.find((s) => s.status === "rejected");
    if (failed) throw (failed as PromiseRejectedResult).reason;
    const choices = settled.map((s) => (s as PromiseFulfilledResult<ChoiceOutcome>).value);
    const first = choices[0]!;
    const aborted = choices.some((c) => c.finishReason === "abort");
    return {
      choices: choices.map(({ cachedTokens: _cached, timeToFirstTokenMs: _ttft, ...choice }) => choice),
      finishReason: aborted ? "abort" : first.finishReason,
      promptTokens: plan.promptTokens.length,
      completionTokens: sum(choices.map((c) => c.completionTokens)),
      reasoningTokens: sum(choices.map((c) => c.reasoningTokens)),
      // The prompt is counted once, as the first choice's sequence read and wrote it.
      cachedTokens: first.cachedTokens,
      cacheWriteTokens: plan.promptTokens.length - first.cachedTokens,
      queueMs,
      timeToFirstTokenMs: first.timeToFirstTokenMs,
    };
  }

  /** Turns the request into a generation plan: prompt, stops, grammars, thinking, limits. */
  private plan(options: ChatGenerateOptions): { plan: GenerationPlan; pinnedTokens: number } {
    const { tools, responseFormat } = options;
    const toolsActive = tools !== undefined && tools.functions.length > 0 && tools.choice !== "none";
    if (toolsActive && !this.syntax.toolCall) {
      throw InvalidRequestError.forField(["tools"], `the model "${this.modelId}" does not support function calling`);
    }
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
      throw InvalidRequestError.forField(
        ["messages"],
        `the prompt is ${promptTokens.length} tokens but this model's context holds ${this.contextSize}; shorten the conversation`,
      );
    }
    const room = this.contextSize - promptTokens.length;
    const vocabulary = this.features.vocabularySize;
    for (const [index, id] of (options.stopTokenIds ?? []).entries()) {
      if (!Number.isInteger(id) || id < 0 || id >= vocabulary) {
        throw InvalidRequestError.forField(["stop_token_ids", index], `token id ${id} is outside this model's vocabulary (0 to ${vocabulary - 1})`);
      }
    }

    const maxTokens = Math.min(options.maxTokens ?? room, room);
    // Every choice may use the whole budget: the most this request can produce.
    options.onPromptReady?.({ promptTokens: promptTokens.length, maxTokens: maxTokens * (options.choices ?? 1) });
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

  async dispose(): Promise<void> {
    this.pool.rejectWaiters(new InferenceError(`The model "${this.modelId}" is shutting down`));
    await this.context.dispose();
    await this.model.dispose();
  }
}

const ANY_OBJECT = { root: { kind: "object" as const, properties: [], open: true }, defs: {} };

function sum(values: number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

function toAvailableFunctions(functions?: readonly FunctionDefinition[]): ChatModelFunctions | undefined {
  if (!functions || functions.length === 0) return undefined;
  return Object.fromEntries(functions.map((f) => [f.name, { description: f.description, params: f.parametersSchema as never }]));
}

/** The standard's messages as node-llama-cpp chat history; tool results attach to the call they answer. */
export function toChatHistory(messages: readonly ChatMessage[]): ChatHistoryItem[] {
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
        if (call) call.result = parseJsonOr(message.content);
        else history.push({ type: "user", text: message.content });
        break;
      }
    }
  }
  return history;
}

function parseJsonOr(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
