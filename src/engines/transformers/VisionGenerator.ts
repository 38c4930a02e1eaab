import { AutoModelForImageTextToText, StoppingCriteria, type PreTrainedModel, type Tensor } from "@huggingface/transformers";
import type { ModelEntry } from "../../config/modelRegistry.js";
import { resolveExecutionProviders, type ExecutionProviderChoice } from "../onnx/resolveExecutionProviders.js";
import type { ChatChoiceResult, ChatGenerateResult, FinishReason, GenerationCall } from "../types.js";
import { transformersDeviceOptions } from "./transformersDeviceOptions.js";
import { engineSessionOptions } from "../onnx/onnxSession.js";
import { configureTransformers } from "./transformersEnv.js";
import type { VisionModelFacts } from "./modelConfig.js";
import type { GenerationSettings } from "./VisionPrompts.js";

interface GenerativeModel extends PreTrainedModel {
  generate(options: Record<string, unknown>): Promise<Tensor>;
}

/** The model's tokenizer, as the generator uses it: token ids back to text. */
export interface Detokenizer {
  decode(ids: bigint[], options?: { skip_special_tokens?: boolean }): string;
}

/** A prompt as the generator takes it: the model's inputs (token ids, pixels) and their token count. */
export interface GeneratorPrompt {
  inputs: Record<string, Tensor>;
  promptTokens: number;
}

/** Stops generation when the caller goes away, a stop string appeared or a stop token was sampled. */
class StopWhen extends StoppingCriteria {
  constructor(private readonly done: () => boolean) {
    super();
  }
  override _call(inputIds: number[][]): boolean[] {
    const stop = this.done();
    return inputIds.map(() => stop);
  }
}

/**
 * The generating half of vision-language chat: transformers.js' generate() over prepared
 * prompts (VisionPrompts), tokens streamed as they are sampled, stop strings and stop tokens
 * honoured, choices one after the other. It runs on the engine's worker thread
 * (visionChatWorker): the text decoder is one onnxruntime run per token, synchronous on its
 * thread, and the first of them reads the whole prompt, image tokens included.
 */
export class VisionGenerator {
  private readonly eosTokenIds: Set<number>;

  private constructor(
    private readonly model: GenerativeModel,
    private readonly tokenizer: Detokenizer,
    eosTokenIds: readonly number[],
    readonly executionProvider: ExecutionProviderChoice,
  ) {
    this.eosTokenIds = new Set(eosTokenIds);
  }

  /**
   * Loads the model. `prompts` is the planner its prompts come from (VisionPrompts): its
   * tokenizer turns tokens back into text, and it has read the model's end-of-answer tokens.
   */
  static async load(entry: ModelEntry, gpu: "auto" | false, prompts: { tokenizer: Detokenizer; facts: Pick<VisionModelFacts, "eosTokenIds"> }): Promise<VisionGenerator> {
    configureTransformers();
    const dir = entry.file!;
    const placement = await resolveExecutionProviders(entry.onnx.executionProviders, { gpu });
    const model = (await AutoModelForImageTextToText.from_pretrained(dir, {
      dtype: entry.onnx.dtype,
      ...transformersDeviceOptions(placement.providers, engineSessionOptions(entry.onnx, false)),
    })) as unknown as GenerativeModel;
    return new VisionGenerator(model, prompts.tokenizer, prompts.facts.eosTokenIds, placement);
  }

  async dispose(): Promise<void> {
    await this.model.dispose();
  }

  /** Every prompt's `count` choices, one after the other. `queueMs` is the caller's to fill in. */
  async run(prompts: GeneratorPrompt[], count: number, maxTokens: number, settings: GenerationSettings, call: GenerationCall): Promise<ChatGenerateResult> {
    const started = Date.now();
    let firstToken: number | null = null;
    call.onStart?.();
    const choices: ChatChoiceResult[] = [];
    for (const [p, prompt] of prompts.entries()) {
      for (let j = 0; j < count; j++) {
        const index = p * count + j;
        if (call.signal?.aborted) {
          choices.push(emptyChoice(index, "abort"));
          continue;
        }
        choices.push(
          await this.generateOne(prompt, index, maxTokens, settings, call, () => {
            firstToken ??= Date.now() - started;
          }),
        );
      }
    }
    const aborted = call.signal?.aborted === true;
    return {
      choices,
      finishReason: aborted ? "abort" : choices[0]!.finishReason,
      promptTokens: prompts.reduce((sum, p) => sum + p.promptTokens, 0),
      completionTokens: choices.reduce((sum, c) => sum + c.completionTokens, 0),
      reasoningTokens: 0,
      cachedTokens: 0,
      cacheWriteTokens: prompts.reduce((sum, p) => sum + p.promptTokens, 0),
      queueMs: 0,
      timeToFirstTokenMs: firstToken,
    };
  }

  private async generateOne(
    prompt: GeneratorPrompt,
    index: number,
    maxTokens: number,
    settings: GenerationSettings,
    call: GenerationCall,
    onFirstToken: () => void,
  ): Promise<ChatChoiceResult> {
    const stops = (settings.stop ?? []).filter((s) => s.length > 0);
    const stopIds = new Set(settings.stopTokenIds ?? []);
    const generated: bigint[] = [];
    let emitted = "";
    let stopped = false;
    let stopTokenSeen = false;
    let promptSeen = false;

    const emit = (final: boolean) => {
      const ids = stopTokenSeen ? generated.slice(0, -1) : generated;
      let text = this.tokenizer.decode(ids, { skip_special_tokens: true });
      if (!final && text.endsWith("\uFFFD")) text = text.replace(/\uFFFD+$/, ""); // half a character: wait for the rest
      const stopAt = firstStop(text, stops);
      if (stopAt >= 0) {
        text = text.slice(0, stopAt);
        stopped = true;
      }
      // A tail that could still become a stop string waits.
      const safe = stopped || final ? text.length : text.length - heldBack(text, stops);
      if (safe > emitted.length) {
        const piece = text.slice(emitted.length, safe);
        emitted = text.slice(0, safe);
        call.onDelta?.(index, { kind: "content", text: piece });
      }
    };
    const streamer = {
      put: (value: bigint[][]) => {
        if (!promptSeen) {
          promptSeen = true;
          return;
        }
        const token = value[0]![0]!;
        if (generated.length === 0) onFirstToken();
        generated.push(token);
        const id = Number(token);
        if (stopIds.has(id)) {
          stopTokenSeen = true;
          stopped = true;
        }
        if (!this.eosTokenIds.has(id)) emit(false);
      },
      end: () => undefined,
    };
    const { sampling } = settings;
    const greedy = sampling.temperature <= 0;
    await this.model.generate({
      ...prompt.inputs,
      max_new_tokens: maxTokens,
      do_sample: !greedy,
      ...(greedy ? {} : { temperature: sampling.temperature, top_k: sampling.topK ?? 0 }),
      ...(sampling.repetitionPenalty !== undefined ? { repetition_penalty: sampling.repetitionPenalty } : {}),
      streamer,
      stopping_criteria: [new StopWhen(() => stopped || call.signal?.aborted === true)],
    });
    const last = generated.at(-1);
    const endedOnEos = last !== undefined && this.eosTokenIds.has(Number(last));
    if (!stopped && !call.signal?.aborted) emit(true);
    const finishReason: FinishReason = call.signal?.aborted ? "abort" : stopped || endedOnEos ? "stop" : "length";
    return { index, content: emitted, reasoning: null, toolCalls: [], finishReason, completionTokens: generated.length, reasoningTokens: 0, logprobs: null };
  }
}

function emptyChoice(index: number, finishReason: FinishReason): ChatChoiceResult {
  return { index, content: "", reasoning: null, toolCalls: [], finishReason, completionTokens: 0, reasoningTokens: 0, logprobs: null };
}

/** Where the first stop string starts in the text, or -1. */
function firstStop(text: string, stops: readonly string[]): number {
  let at = -1;
  for (const stop of stops) {
    const found = text.indexOf(stop);
    if (found >= 0 && (at < 0 || found < at)) at = found;
  }
  return at;
}

/** How many characters at the end of the text are the start of a stop string. */
function heldBack(text: string, stops: readonly string[]): number {
  let longest = 0;
  for (const stop of stops) {
    for (let n = Math.min(stop.length - 1, text.length); n > longest; n--) {
      if (text.endsWith(stop.slice(0, n))) {
        longest = n;
        break;
      }
    }
  }
  return longest;
}
