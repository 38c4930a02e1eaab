import { join } from "node:path";
import { AutoModelForImageTextToText, AutoProcessor, cat, full, RawImage, StoppingCriteria, Tensor, type PreTrainedModel } from "@huggingface/transformers";
import type { ModelEntry } from "../../config/modelRegistry.js";
import { PlanRefusalError } from "../PlanRefusal.js";
import type {
  ChatChoiceResult,
  ChatEngine,
  ChatFeatures,
  ChatGenerateOptions,
  ChatGenerateResult,
  ChatMessage,
  CompleteOptions,
  CompleteResult,
  CompletionCall,
  DecodedImage,
  FinishReason,
  GenerationCall,
  PlannedChat,
  PlannedCompletion,
  SamplingOptions,
  UserContentPart,
} from "../types.js";
import { resolveExecutionProviders, type ExecutionProviderChoice } from "../onnx/resolveExecutionProviders.js";
import { WorkQueue } from "../WorkQueue.js";
import { readJson, VISION_CHAT_FAMILIES } from "./modelConfig.js";
import { transformersDeviceOptions } from "./transformersDeviceOptions.js";
import { configureTransformers } from "./transformersEnv.js";
import { exceptPerTokenSessions, loadWithSessionsOffThread } from "../onnx/OffThreadSession.js";

/** Choices one request may ask for: generated one after the other on the one queue. */
const MAX_CHOICES = 4;

/** Sampling fields transformers.js' generate() has no processor for (top_p's warper is a stub in 4.x). */
const IGNORED_SAMPLING: readonly (keyof SamplingOptions)[] = ["topP", "minP", "seed", "frequencyPenalty", "presencePenalty"];

type Part = { type: "text"; text: string } | { type: "image" };
interface TemplateMessage {
  role: string;
  content: Part[];
}

/** What the Idefics3 processor reads and writes, typed for the calls here. */
interface Idefics3Processor {
  image_processor: (
    images: RawImage[],
    options: { do_image_splitting: boolean; return_row_col_info: boolean },
  ) => Promise<{
    pixel_values: Tensor;
    rows: number[][];
    cols: number[][];
  }>;
  tokenizer: {
    (text: string, options?: { add_special_tokens?: boolean }): { input_ids: Tensor; attention_mask: Tensor };
    decode(ids: number[] | bigint[], options?: { skip_special_tokens?: boolean }): string;
    apply_chat_template(messages: TemplateMessage[], options: { add_generation_prompt: boolean; tokenize: false }): string;
  };
  config: { image_seq_len: number };
  fake_image_token: string;
  image_token: string;
  global_img_token: string;
}

interface GenerativeModel extends PreTrainedModel {
  generate(options: Record<string, unknown>): Promise<Tensor>;
}

/** What config.json says that the engine reads. */
interface VisionModelConfig {
  model_type?: string;
  eos_token_id?: number | number[];
  vocab_size?: number;
  text_config?: { max_position_embeddings?: number; eos_token_id?: number | number[]; vocab_size?: number };
}

/** One prompt, measured and ready to run: its token ids and, with pictures, their pixel tensors. */
interface PreparedPrompt {
  inputs: Record<string, Tensor>;
  promptTokens: number;
  /** Prompt text for an echo (completions). */
  text: string;
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
 * Vision-language chat (Idefics3 / SmolVLM ONNX exports) through transformers.js: the model's
 * own chat template and image processor, pictures tiled as the processor tiles them (`detail:
 * "low"`: one tile), video as frames sampled by the caller (SmolVLM2's layout: a line per frame
 * with its time), tokens streamed as they are sampled. One generation runs at a time (a few CPU
 * cores); `n` choices run one after the other. Plain text requests work as on any chat model.
 */
export class TransformersVisionChatEngine implements ChatEngine {
  readonly kind = "chat";
  readonly router = "transformers (transformers.js image-text-to-text)";
  readonly features: ChatFeatures;
  private readonly queue: WorkQueue;
  private readonly eosTokenIds: Set<number>;

  private constructor(
    private readonly model: GenerativeModel,
    private readonly processor: Idefics3Processor,
    readonly contextSize: number,
    vocabularySize: number,
    eos: number[],
    private readonly modelId: string,
    maxWaiting: number,
    readonly executionProvider: ExecutionProviderChoice,
  ) {
    this.queue = new WorkQueue(modelId, maxWaiting);
    this.eosTokenIds = new Set(eos);
    this.features = {
      ignoredSampling: IGNORED_SAMPLING,
      functionCalling: false,
      reasoning: false,
      reasoningToggle: false,
      responseSchema: false,
      logprobs: false,
      dynamicTemperature: false,
      maxChoices: MAX_CHOICES,
      vocabularySize,
      infill: false,
    };
  }

  static async load(entry: ModelEntry, gpu: "auto" | false): Promise<TransformersVisionChatEngine> {
    configureTransformers();
    const dir = entry.file!;
    const config = readJson(join(dir, "config.json")) as VisionModelConfig | undefined;
    if (!config || !(VISION_CHAT_FAMILIES as readonly string[]).includes(config.model_type ?? "")) {
      throw new Error(`${dir}: not an Idefics3/SmolVLM model (config.json model_type "${config?.model_type}"; this backend runs ${VISION_CHAT_FAMILIES.join(", ")})`);
    }
    const placement = await resolveExecutionProviders(entry.onnx.executionProviders, { gpu });
    const processor = (await AutoProcessor.from_pretrained(dir)) as unknown as Idefics3Processor;
    const model = (await loadWithSessionsOffThread(exceptPerTokenSessions, () =>
      AutoModelForImageTextToText.from_pretrained(dir, {
        dtype: entry.onnx.dtype,
        ...transformersDeviceOptions(placement.providers, entry.onnx.threads > 0 ? { intraOpNumThreads: entry.onnx.threads } : {}),
      }),
    )) as unknown as GenerativeModel;
    const text = config.text_config ?? {};
    const contextSize = entry.vision.contextSize ?? text.max_position_embeddings ?? 2048;
    const eos = [config.eos_token_id ?? text.eos_token_id].flat().filter((id): id is number => typeof id === "number");
    return new TransformersVisionChatEngine(model, processor, contextSize, text.vocab_size ?? config.vocab_size ?? 0, eos, entry.id, entry.queue.maxWaiting, placement);
  }

  stats() {
    const { busy, waiting } = this.queue.stats();
    return { sequences: 1, busy, waiting };
  }

  async dispose(): Promise<void> {
    await this.model.dispose();
  }

  async plan(options: ChatGenerateOptions): Promise<PlannedChat> {
    const prompt = await this.preparePrompt(options.messages);
    const count = options.choices ?? 1;
    const maxTokens = this.completionBudget(prompt.promptTokens, options.maxTokens, null);
    return {
      promptTokens: prompt.promptTokens,
      maxTokens: maxTokens * count,
      choices: count,
      generate: (call) => this.run([prompt], count, maxTokens, options, call),
    };
  }

  planCompletion(options: CompleteOptions): PlannedCompletion {
    if (options.suffix !== undefined) throw new PlanRefusalError({ kind: "noInfillTokens" }, this.modelId);
    if (options.echo && options.logprobs) throw new PlanRefusalError({ kind: "echoUnavailable" }, this.modelId);
    const count = options.choices ?? 1;
    const prompts = options.prompts.map((prompt, index) => this.rawPrompt(prompt, index));
    const maxTokens = Math.min(...prompts.map((p, index) => this.completionBudget(p.promptTokens, options.maxTokens, index)));
    return {
      promptTokens: prompts.reduce((sum, p) => sum + p.promptTokens, 0),
      maxTokens: maxTokens * count * prompts.length,
      choices: count * prompts.length,
      generate: async (call: CompletionCall) => {
        const onStart = () => {
          if (options.echo) for (const [p, prompt] of prompts.entries()) call.onEcho?.(p, { text: prompt.text, tokens: null });
          call.onStart?.();
        };
        const result: CompleteResult = await this.run(prompts, count, maxTokens, options, { ...call, onStart, onDelta: call.onDelta as GenerationCall["onDelta"] });
        if (options.echo) result.echoed = prompts.map((p) => ({ text: p.text, tokens: null }));
        return result;
      },
    };
  }

  /** Tokens left for the answer: the request's limit, within the context after the prompt. */
  private completionBudget(promptTokens: number, requested: number | undefined, prompt: number | null): number {
    const room = this.contextSize - promptTokens;
    if (room <= 0) throw new PlanRefusalError({ kind: "promptTooLong", prompt, promptTokens, contextSize: this.contextSize }, this.modelId);
    return Math.min(requested ?? room, room);
  }

  private rawPrompt(prompt: string | number[], index: number): PreparedPrompt {
    if (typeof prompt === "string") {
      const { input_ids, attention_mask } = this.processor.tokenizer(prompt, { add_special_tokens: false });
      if (input_ids.dims[1] === 0) throw new PlanRefusalError({ kind: "emptyPrompt", prompt: index }, this.modelId);
      return { inputs: { input_ids, attention_mask }, promptTokens: input_ids.dims[1]!, text: prompt };
    }
    const vocabularySize = this.features.vocabularySize;
    const outside = prompt.findIndex((id) => !Number.isInteger(id) || id < 0 || id >= vocabularySize);
    if (outside >= 0) throw new PlanRefusalError({ kind: "tokenOutsideVocabulary", prompt: index, position: outside, id: prompt[outside]!, vocabularySize }, this.modelId);
    if (prompt.length === 0) throw new PlanRefusalError({ kind: "emptyPrompt", prompt: index }, this.modelId);
    const text = this.processor.tokenizer.decode(prompt);
    // Token ids go in as they are, not re-tokenized from their text.
    return {
      inputs: { input_ids: new Tensor("int64", BigInt64Array.from(prompt.map(BigInt)), [1, prompt.length]), attention_mask: full([1, prompt.length], 1n) },
      promptTokens: prompt.length,
      text,
    };
  }

  /**
   * The conversation through the model's chat template, each picture through the image
   * processor on its own (so `detail` applies per picture), and the <image> placeholders
   * expanded as the Idefics3 processor expands them: per tile, `image_seq_len` image tokens
   * between <fake_token_around_image> markers, a <row_r_col_c> before each tile, the global view last.
   */
  private async preparePrompt(messages: readonly ChatMessage[]): Promise<PreparedPrompt> {
    const pictures: { image: DecodedImage; split: boolean }[] = [];
    const templated: TemplateMessage[] = messages.map((message) => {
      if (message.role === "user" && message.parts) return { role: "user", content: message.parts.flatMap((part) => this.templateParts(part, pictures)) };
      const text = message.role === "assistant" ? (message.content ?? "") : message.content;
      return { role: message.role === "tool" ? "user" : message.role, content: [{ type: "text", text }] };
    });
    const text = this.processor.tokenizer.apply_chat_template(templated, { add_generation_prompt: true, tokenize: false });
    if (pictures.length === 0) {
      const { input_ids, attention_mask } = this.processor.tokenizer(text, { add_special_tokens: false });
      return { inputs: { input_ids, attention_mask }, promptTokens: input_ids.dims[1]!, text };
    }
    const processed = [];
    for (const { image, split } of pictures) {
      const raw = new RawImage(new Uint8ClampedArray(image.rgb.buffer, image.rgb.byteOffset, image.rgb.byteLength), image.width, image.height, 3);
      processed.push(await this.processor.image_processor([raw], { do_image_splitting: split, return_row_col_info: true }));
    }
    const pieces = text.split(this.processor.image_token);
    let expanded = pieces[0]!;
    for (const [index, { rows, cols }] of processed.entries()) expanded += this.imagePrompt(rows[0]![0]!, cols[0]![0]!) + pieces[index + 1]!;
    const { input_ids, attention_mask } = this.processor.tokenizer(expanded, { add_special_tokens: false });
    // Every tile of every picture, in prompt order: [1, tiles, 3, S, S].
    const pixel_values =
      processed.length === 1
        ? processed[0]!.pixel_values
        : cat(
            processed.map((p) => p.pixel_values),
            1,
          );
    const [, tiles, , height, width] = pixel_values.dims as [number, number, number, number, number];
    const pixel_attention_mask = full([1, tiles, height, width], true);
    return { inputs: { input_ids, attention_mask, pixel_values, pixel_attention_mask }, promptTokens: input_ids.dims[1]!, text };
  }

  private templateParts(part: UserContentPart, pictures: { image: DecodedImage; split: boolean }[]): Part[] {
    switch (part.type) {
      case "text":
        return [{ type: "text", text: part.text }];
      case "image":
        if (!part.image) return [];
        pictures.push({ image: part.image, split: part.detail !== "low" });
        return [{ type: "image" }];
      case "video": {
        const frames = part.frames ?? [];
        const out: Part[] = [{ type: "text", text: `You are provided the following series of ${frames.length} frames from a ${clock(part.duration ?? 0)} video.\n` }];
        for (const [index, frame] of frames.entries()) {
          pictures.push({ image: frame, split: false });
          out.push({ type: "text", text: `\nFrame from ${clock(part.frameTimes?.[index] ?? 0)}:` }, { type: "image" });
        }
        out.push({ type: "text", text: "\n\n" });
        return out;
      }
    }
  }

  private imagePrompt(rows: number, cols: number): string {
    const { fake_image_token: around, image_token: image, global_img_token: global } = this.processor;
    const tokens = image.repeat(this.processor.config.image_seq_len);
    const globalView = `${around}${global}${tokens}${around}`;
    if (rows === 0 && cols === 0) return globalView;
    let out = "";
    for (let r = 1; r <= rows; r++) {
      for (let c = 1; c <= cols; c++) out += `${around}<row_${r}_col_${c}>${tokens}`;
      out += "\n";
    }
    return `${out}\n${globalView}`;
  }

  /** Runs every prompt's choices one after the other, in the queue's one slot. */
  private async run(
    prompts: PreparedPrompt[],
    count: number,
    maxTokens: number,
    options: Pick<ChatGenerateOptions, "sampling" | "stop" | "stopTokenIds">,
    call: GenerationCall,
  ): Promise<ChatGenerateResult> {
    const queued = Date.now();
    return this.queue.run(async () => {
      const queueMs = Date.now() - queued;
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
            await this.generateOne(prompt, index, maxTokens, options, call, () => {
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
        queueMs,
        timeToFirstTokenMs: firstToken,
      };
    }, call.signal);
  }

  private async generateOne(
    prompt: PreparedPrompt,
    index: number,
    maxTokens: number,
    options: Pick<ChatGenerateOptions, "sampling" | "stop" | "stopTokenIds">,
    call: GenerationCall,
    onFirstToken: () => void,
  ): Promise<ChatChoiceResult> {
    const stops = (options.stop ?? []).filter((s) => s.length > 0);
    const stopIds = new Set(options.stopTokenIds ?? []);
    const generated: bigint[] = [];
    let emitted = "";
    let stopped = false;
    let stopTokenSeen = false;
    let promptSeen = false;
    const tokenizer = this.processor.tokenizer;

    const emit = (final: boolean) => {
      const ids = stopTokenSeen ? generated.slice(0, -1) : generated;
      let text = tokenizer.decode(ids, { skip_special_tokens: true });
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
    const { sampling } = options;
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

/** Seconds as SmolVLM2's frame labels write them: MM:SS, or H:MM:SS past an hour. */
function clock(seconds: number): string {
  const whole = Math.max(0, Math.floor(seconds));
  const [h, m, s] = [Math.floor(whole / 3600), Math.floor((whole % 3600) / 60), whole % 60];
  const two = (n: number) => String(n).padStart(2, "0");
  return h > 0 ? `${h}:${two(m)}:${two(s)}` : `${two(m)}:${two(s)}`;
}
