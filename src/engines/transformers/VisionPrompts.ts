import { AutoProcessor, cat, full, RawImage, Tensor } from "@huggingface/transformers";
import type { ModelEntry } from "../../config/modelRegistry.js";
import { PlanRefusalError } from "../PlanRefusal.js";
import type { ChatGenerateOptions, ChatMessage, CompleteOptions, DecodedImage, UserContentPart } from "../types.js";
import { readVisionModelFacts, type VisionModelFacts } from "./modelConfig.js";
import { configureTransformers } from "./transformersEnv.js";

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

/** One prompt, measured and ready to run: its token ids and, with pictures, their pixel tensors. */
export interface PreparedPrompt {
  inputs: Record<string, Tensor>;
  promptTokens: number;
  /** Prompt text for an echo (completions). */
  text: string;
}

/** What a generation needs besides its prompts: the request's sampling and stops. */
export type GenerationSettings = Pick<ChatGenerateOptions, "sampling" | "stop" | "stopTokenIds">;

/** What planning a chat request needs of its options. */
export type ChatPlanOptions = Pick<ChatGenerateOptions, "messages" | "maxTokens" | "choices">;

/** What planning a completion needs of its options. */
export type CompletionPlanOptions = Pick<CompleteOptions, "prompts" | "maxTokens" | "suffix" | "echo" | "logprobs">;

/**
 * The planning half of vision-language chat (Idefics3 / SmolVLM ONNX exports): the model's own
 * chat template and image processor, pictures tiled as the processor tiles them (`detail:
 * "low"`: one tile), video as frames sampled by the caller (SmolVLM2's layout: a line per frame
 * with its time), each prompt measured in tokens and its completion budget set, or the request
 * refused (PlanRefusalError), before anything runs. It runs on the engine's worker thread
 * beside VisionGenerator: the processor's resize and tiling are JavaScript loops and small
 * onnxruntime graphs, most of a second for a large picture.
 */
export class VisionPrompts {
  private constructor(
    private readonly processor: Idefics3Processor,
    readonly facts: VisionModelFacts,
    private readonly modelId: string,
  ) {}

  static async load(entry: ModelEntry): Promise<VisionPrompts> {
    const facts = readVisionModelFacts(entry);
    configureTransformers();
    const processor = (await AutoProcessor.from_pretrained(entry.file!)) as unknown as Idefics3Processor;
    return new VisionPrompts(processor, facts, entry.id);
  }

  get contextSize(): number {
    return this.facts.contextSize;
  }

  /** The model's tokenizer, for the generator to turn tokens back into text. */
  get tokenizer(): Idefics3Processor["tokenizer"] {
    return this.processor.tokenizer;
  }

  /** A chat request's one prompt and each choice's token budget. */
  async planChat(options: ChatPlanOptions): Promise<{ prompts: PreparedPrompt[]; maxTokens: number }> {
    const prompt = await this.preparePrompt(options.messages);
    return { prompts: [prompt], maxTokens: this.completionBudget(prompt.promptTokens, options.maxTokens, null) };
  }

  /** A completion's prompts (text as it is, or token ids) and each choice's token budget. */
  planCompletion(options: CompletionPlanOptions): { prompts: PreparedPrompt[]; maxTokens: number } {
    if (options.suffix !== undefined) throw new PlanRefusalError({ kind: "noInfillTokens" }, this.modelId);
    if (options.echo && options.logprobs) throw new PlanRefusalError({ kind: "echoUnavailable" }, this.modelId);
    const prompts = options.prompts.map((prompt, index) => this.rawPrompt(prompt, index));
    return { prompts, maxTokens: Math.min(...prompts.map((p, index) => this.completionBudget(p.promptTokens, options.maxTokens, index))) };
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
    const vocabularySize = this.facts.vocabularySize;
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
}

/** Seconds as SmolVLM2's frame labels write them: MM:SS, or H:MM:SS past an hour. */
function clock(seconds: number): string {
  const whole = Math.max(0, Math.floor(seconds));
  const [h, m, s] = [Math.floor(whole / 3600), Math.floor((whole % 3600) / 60), whole % 60];
  const two = (n: number) => String(n).padStart(2, "0");
  return h > 0 ? `${h}:${two(m)}:${two(s)}` : `${two(m)}:${two(s)}`;
}
