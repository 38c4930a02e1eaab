import type { ModelEntry } from "../../config/modelRegistry.js";
import { ModelAtCapacityError } from "../../errors.js";
import type { ExecutionProviderChoice } from "../onnx/resolveExecutionProviders.js";
import { PlanRefusalError } from "../PlanRefusal.js";
import type {
  ChatEngine,
  ChatMessage,
  ChatFeatures,
  ChatGenerateOptions,
  ChatGenerateResult,
  CompleteOptions,
  CompleteResult,
  CompletionCall,
  GenerationCall,
  PlannedChat,
  PlannedCompletion,
} from "../types.js";
import { EngineOnWorker, startEngineWorker } from "../worker/EngineOnWorker.js";
import { siblingModule } from "../worker/siblingModule.js";
import type { WorkerPool } from "../worker/WorkerPool.js";
import { longestTokenBytes, readVisionModelFacts, visionChatFeatures } from "./modelConfig.js";
import type { VisionEvent, VisionPlan, VisionTask, VisionWorkerInfo } from "./visionChatWorker.js";
import type { GenerationSettings } from "./VisionPrompts.js";
import { promptsToWire, type WirePrompt } from "./visionWire.js";

const WORKER = siblingModule(import.meta.url, "visionChatWorker");

/**
 * Vision-language chat (Idefics3 / SmolVLM ONNX exports) through transformers.js, on a worker
 * thread of its own (visionChatWorker): onnxruntime-node runs each inference synchronously on
 * its calling thread, and a picture question is most of a second of image processing (resize and
 * tiling), a vision encoder pass, a text-decoder pass over hundreds of image tokens, then a pass
 * per token. Here none of it holds the event loop that serves chat streams and every other
 * request; this side only moves prompts and text between the two.
 *
 * A request is planned on the worker as soon as it comes (VisionPrompts: the chat template, the
 * image processor's tiles, the prompt's tokens and the answer's budget), between the steps of a
 * generation already running, so its credits are held before it waits; its prepared prompt
 * comes back here and goes with the generation, which waits its turn in the pool's queue
 * (VisionGenerator: one at a time, `n` choices one after the other, 503 past the queue limit).
 * Plain text requests work as on any chat model.
 */
export class TransformersVisionChatEngine extends EngineOnWorker implements ChatEngine {
  readonly kind = "chat";
  readonly router = "transformers (transformers.js image-text-to-text, worker thread)";
  readonly features: ChatFeatures;
  readonly contextSize: number;
  readonly executionProvider: ExecutionProviderChoice;
  /** Longer text cannot fit the context: the chat and completions services refuse it before the worker tokenizes it (seconds for megabytes). */
  readonly maxPromptChars: number | undefined;
  /** Requests being planned on the worker now. */
  private planning = 0;

  private constructor(
    pool: WorkerPool,
    private readonly modelId: string,
    facts: ReturnType<typeof readVisionModelFacts>,
    longestToken: number | undefined,
  ) {
    super(pool);
    this.features = visionChatFeatures(facts);
    this.contextSize = facts.contextSize;
    this.maxPromptChars = longestToken === undefined ? undefined : facts.contextSize * longestToken;
    this.executionProvider = (pool.info as VisionWorkerInfo).executionProvider;
  }

  static async load(entry: ModelEntry, gpu: "auto" | false): Promise<TransformersVisionChatEngine> {
    // config.json first: a directory that is not a vision-language model is refused before a worker starts.
    const facts = readVisionModelFacts(entry);
    return new TransformersVisionChatEngine(await startEngineWorker(WORKER, entry, gpu), entry.id, facts, longestTokenBytes(entry.file!));
  }

  override stats() {
    return { sequences: 1, ...super.stats() };
  }

  async plan(options: ChatGenerateOptions): Promise<PlannedChat> {
    const messages = options.messages.map(withoutSources);
    const { prompts, maxTokens } = await this.planOnWorker({ kind: "plan-chat", options: { messages, maxTokens: options.maxTokens, choices: options.choices } });
    const count = options.choices ?? 1;
    return {
      promptTokens: prompts[0]!.promptTokens,
      maxTokens: maxTokens * count,
      choices: count,
      generate: (call) => this.generate(prompts, count, maxTokens, options, call),
    };
  }

  // The ChatEngine interface allows a promise here too (planning needs the worker's tokenizer).
  async planCompletion(options: CompleteOptions): Promise<PlannedCompletion> {
    const { echo, logprobs, suffix, maxTokens: requested } = options;
    const { prompts, maxTokens } = await this.planOnWorker({ kind: "plan-completion", options: { prompts: options.prompts, maxTokens: requested, suffix, echo, logprobs } });
    const count = options.choices ?? 1;
    return {
      promptTokens: prompts.reduce((sum, p) => sum + p.promptTokens, 0),
      maxTokens: maxTokens * count * prompts.length,
      choices: count * prompts.length,
      generate: async (call: CompletionCall) => {
        const onStart = () => {
          if (echo) for (const [p, prompt] of prompts.entries()) call.onEcho?.(p, { text: prompt.text, tokens: null });
          call.onStart?.();
        };
        const result: CompleteResult = await this.generate(prompts, count, maxTokens, options, { ...call, onStart, onDelta: call.onDelta as GenerationCall["onDelta"] });
        if (echo) result.echoed = prompts.map((p) => ({ text: p.text, tokens: null }));
        return result;
      },
    };
  }

  /**
   * Plans on the worker. Planning a picture is most of a second of the worker's time, so a
   * request the queue could not take is refused first, counting the plans already under way as
   * places taken: a burst gets its 503s at once instead of after the worker planned them all.
   */
  private async planOnWorker(task: Extract<VisionTask, { kind: "plan-chat" | "plan-completion" }>): Promise<{ prompts: WirePrompt[]; maxTokens: number }> {
    if (!this.pool.hasRoom(this.planning + 1)) throw new ModelAtCapacityError(this.modelId);
    this.planning++;
    try {
      const plan = await this.pool.call<VisionPlan>(task);
      if ("refused" in plan) throw new PlanRefusalError(plan.refused, this.modelId);
      return plan;
    } finally {
      this.planning--;
    }
  }

  private async generate(prompts: WirePrompt[], count: number, maxTokens: number, settings: GenerationSettings, call: GenerationCall): Promise<ChatGenerateResult> {
    // The prompts' tensors move to the worker (a planned request is generated once).
    const wire = promptsToWire(prompts);
    const task: VisionTask = {
      kind: "generate",
      prompts: wire.prompts,
      count,
      maxTokens,
      settings: { sampling: settings.sampling, stop: settings.stop, stopTokenIds: settings.stopTokenIds },
    };
    const asked = Date.now();
    let queueMs = 0;
    const result = await this.runTask<ChatGenerateResult>(
      task,
      call.signal,
      (event) => {
        const e = event as VisionEvent;
        if (e.kind === "start") {
          queueMs = Date.now() - asked;
          call.onStart?.();
        } else call.onDelta?.(e.choice, e.delta);
      },
      wire.transfer,
    );
    return { ...result, queueMs };
  }
}

/**
 * A message as the worker needs it: pictures and frames decoded, without the parts as the caller
 * wrote them (`source`, for relays: a data URL can be megabytes the worker would only copy).
 */
function withoutSources(message: ChatMessage): ChatMessage {
  if (message.role !== "user" || !message.parts) return message;
  return { ...message, parts: message.parts.map((part) => (part.type === "text" ? part : { ...part, source: {} })) };
}
