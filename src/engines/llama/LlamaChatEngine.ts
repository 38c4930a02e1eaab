import {
  isLlamaText,
  LlamaText,
  resolveChatWrapper,
  type ChatHistoryItem,
  type ChatModelFunctionCall,
  type ChatWrapper,
  type LlamaContext,
  type LlamaContextSequence,
  type LlamaModel,
  type Token,
} from "node-llama-cpp";
import type { LlamaSettings } from "../../config.js";
import { InferenceError, InvalidRequestError } from "../../errors.js";
import type { ChatEngine, ChatGenerateOptions, ChatGenerateResult, ChatMessage, FinishReason } from "../types.js";
import { getSharedLlama } from "./getSharedLlama.js";
import { SequencePool } from "./SequencePool.js";
import { StreamingDetokenizer } from "./StreamingDetokenizer.js";

export interface LlamaChatEngineOptions {
  modelId: string;
  file: string;
  settings: LlamaSettings;
  maxWaiting: number;
  gpu?: "auto" | false;
}

/**
 * Chat on a GGUF model through node-llama-cpp. One context with N sequences serves
 * concurrent requests; the prompt is rendered by the chat wrapper resolved once from the
 * model's own template; generation is Hearth's own token loop over the sequence, so
 * streaming, stop strings and (later) token probabilities share one path.
 */
export class LlamaChatEngine implements ChatEngine {
  readonly kind = "chat" as const;
  readonly router: string;

  private constructor(
    private readonly modelId: string,
    private readonly model: LlamaModel,
    private readonly context: LlamaContext,
    private readonly chatWrapper: ChatWrapper,
    private readonly pool: SequencePool,
    gpu: string | false,
  ) {
    this.router = `llama.cpp/${gpu || "cpu"}`;
  }

  static async load(options: LlamaChatEngineOptions): Promise<LlamaChatEngine> {
    const llama = await getSharedLlama(options.gpu);
    const { settings } = options;
    const model = await llama.loadModel({ modelPath: options.file, gpuLayers: settings.gpuLayers });
    try {
      const context = await model.createContext({
        contextSize: settings.contextSize,
        sequences: settings.sequences,
        threads: settings.threads || undefined,
        batchSize: settings.batchSize,
        flashAttention: settings.flashAttention,
      });
      // Resolving the wrapper parses the Jinja template: do it once per model, not per request.
      const chatWrapper = resolveChatWrapper(model);
      const pool = new SequencePool(context, options.modelId, options.maxWaiting);
      return new LlamaChatEngine(options.modelId, model, context, chatWrapper, pool, llama.gpu);
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

  /** Renders the conversation with the model's template and tokenizes it. */
  renderPrompt(messages: readonly ChatMessage[]): { tokens: Token[]; stopStrings: string[]; stopTokens: Set<Token> } {
    const state = this.chatWrapper.generateContextState({ chatHistory: [...toChatHistory(messages), { type: "model", response: [] }] });
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
    return { tokens, stopStrings: stopStrings.filter((s) => s.length > 0), stopTokens };
  }

  async generate(options: ChatGenerateOptions): Promise<ChatGenerateResult> {
    const prompt = this.renderPrompt(options.messages);
    if (prompt.tokens.length >= this.contextSize) {
      throw InvalidRequestError.forField(
        ["messages"],
        `the prompt is ${prompt.tokens.length} tokens but this model's context holds ${this.contextSize}; shorten the conversation`,
      );
    }
    const room = this.contextSize - prompt.tokens.length;
    const maxTokens = Math.min(options.maxTokens ?? room, room);
    options.onPromptReady?.({ promptTokens: prompt.tokens.length, maxTokens });

    const queuedAt = performance.now();
    const sequence = await this.pool.acquire(prompt.tokens, options.signal);
    const queueMs = performance.now() - queuedAt;
    try {
      return await this.runOnSequence(sequence, prompt, maxTokens, options, queueMs);
    } finally {
      this.pool.release(sequence);
    }
  }

  private async runOnSequence(
    sequence: LlamaContextSequence,
    prompt: ReturnType<LlamaChatEngine["renderPrompt"]>,
    maxTokens: number,
    options: ChatGenerateOptions,
    queueMs: number,
  ): Promise<ChatGenerateResult> {
    // Keep the longest cached prefix (at least one prompt token must be evaluated to get logits).
    const reusable = Math.min(sequence.compareContextTokens(prompt.tokens).firstDifferentIndex, prompt.tokens.length - 1);
    if (sequence.nextTokenIndex > reusable) {
      await sequence.eraseContextTokenRanges([{ start: reusable, end: sequence.nextTokenIndex }]);
    }
    const cachedTokens = sequence.nextTokenIndex;

    const detokenizer = new StreamingDetokenizer(this.model, [...(options.stop ?? []), ...prompt.stopStrings]);
    const generated: Token[] = [];
    const { sampling } = options;
    const startedAt = performance.now();
    let firstTokenAt: number | null = null;
    let finishReason: FinishReason = "length";

    if (maxTokens <= 0) finishReason = "length";
    else {
      try {
        const iterator = sequence.evaluate(prompt.tokens.slice(cachedTokens), {
          temperature: sampling.temperature,
          topK: sampling.topK,
          topP: sampling.topP,
          minP: sampling.minP,
          seed: sampling.seed,
          yieldEogToken: true,
          repeatPenalty: hasRepeatPenalty(sampling)
            ? {
                punishTokens: () => generated,
                penalty: sampling.repetitionPenalty,
                frequencyPenalty: sampling.frequencyPenalty || undefined,
                presencePenalty: sampling.presencePenalty || undefined,
              }
            : undefined,
        });
        for await (const token of iterator) {
          if (options.signal?.aborted) {
            finishReason = "abort";
            break;
          }
          firstTokenAt ??= performance.now();
          if (this.model.isEogToken(token) || prompt.stopTokens.has(token)) {
            finishReason = "stop";
            break;
          }
          generated.push(token);
          const { delta, stopped } = detokenizer.push(token);
          if (delta) options.onText?.(delta);
          if (stopped) {
            finishReason = "stop";
            break;
          }
          if (generated.length >= maxTokens) {
            finishReason = "length";
            break;
          }
        }
      } catch (error) {
        if (options.signal?.aborted) finishReason = "abort";
        else throw new InferenceError(`Inference failed: ${(error as Error).message}`);
      }
    }
    if (finishReason !== "stop" || detokenizer.text.length === 0) {
      const rest = detokenizer.flush();
      if (rest && finishReason !== "abort") options.onText?.(rest);
    }
    return {
      text: detokenizer.text,
      finishReason,
      promptTokens: prompt.tokens.length,
      completionTokens: generated.length,
      cachedTokens,
      queueMs,
      timeToFirstTokenMs: firstTokenAt === null ? null : firstTokenAt - startedAt,
    };
  }

  async dispose(): Promise<void> {
    this.pool.rejectWaiters(new InferenceError(`The model "${this.modelId}" is shutting down`));
    await this.context.dispose();
    await this.model.dispose();
  }
}

function hasRepeatPenalty(s: ChatGenerateOptions["sampling"]): boolean {
  return (s.repetitionPenalty !== undefined && s.repetitionPenalty !== 1) || !!s.frequencyPenalty || !!s.presencePenalty;
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
        const response: (string | ChatModelFunctionCall)[] = [];
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
