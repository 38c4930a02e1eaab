import { randomInt } from "node:crypto";
import type { ModelEntry } from "../../config/modelRegistry.js";
import { InvalidRequestError, NotFoundError } from "../../errors.js";
import type { BackgroundRemovalEngine, ImageEngine, ImageGenerateResult } from "../../engines/types.js";
import { decodeMask, encodeImage, type ImageFormat, resizeRgb } from "../../media/image.js";
import type { EditImageRequest, MultiEditImageRequest, StandardEditImageRequest } from "./editSchema.js";
import type { ModelLease, ModelManager } from "../../models/ModelManager.js";
import type { GenerateImageRequest, SimpleGenerateImageRequest } from "./schema.js";
import { applyStyle, type ImageStyles } from "./styles.js";
import { withDeadline } from "../../http/withDeadline.js";

/** Everything a generation needs, validated against the model's limits. */
export interface ImagePlan {
  entry: ModelEntry;
  prompt: string;
  negativePrompt: string;
  width: number;
  height: number;
  steps: number;
  cfgScale: number;
  seed: number;
  variants: number;
  safeMode: boolean;
  format: ImageFormat;
  /** EXIF ImageDescription, when embed_exif_metadata asked for it. */
  exif?: string;
  /** The encoder's quality (jpeg, webp), from the standard's output_compression. */
  quality?: number;
  /** Fields the request set that this node accepts but cannot honour (x-service-unsupported-parameters). */
  unsupported: string[];
  /** `background: "transparent"`: the background-removal model that cuts each image out (PNG or WebP with alpha). */
  transparentWith?: ModelEntry;
  /** An edit: the picture (and mask) at the plan's size, and how far from it to go. */
  init?: { rgb: Uint8Array; strength: number; mask?: Uint8Array };
}

export interface ImageOutcome {
  engine: ImageEngine;
  result: ImageGenerateResult;
  /** Encoded images, in order. */
  files: Buffer[];
  /** Whether any image was blurred (safe mode and the classifier flagged it). */
  blurred: boolean;
  /** The classifier's verdict over all images; null when no classifier ran. */
  flagged: boolean | null;
}

const field = (path: string, message: string) => InvalidRequestError.forField([path], message);

/** Wire requests -> generation plans -> encoded images. Knows nothing about Express. */
export class ImageService {
  constructor(
    private readonly models: ModelManager,
    private readonly styles: ImageStyles,
    private readonly requestTimeoutMs: number,
  ) {}

  /** The node's default image model: the first with the "default" trait, else the first image model. */
  defaultModel(): ModelEntry {
    const images = this.models.list().filter((m) => m.type === "image");
    const entry = images.find((m) => m.traits.includes("default")) ?? images[0];
    if (!entry) throw new NotFoundError("This node serves no image models. GET /models?type=image lists them.");
    return entry;
  }

  planGenerate(request: GenerateImageRequest): ImagePlan {
    const entry = this.models.get(request.model, "image");
    const settings = entry.image;
    // The provider's fields a local pipeline has no part for: accepted, generated without, and named.
    const unsupported = [
      request.style_references?.length ? "style_references" : undefined,
      request.enable_web_search ? "enable_web_search" : undefined,
      request.enhance_prompt ? "enhance_prompt" : undefined,
      request.inpaint != null ? "inpaint" : undefined,
      request.disable_prompt_optimization_thinking != null ? "disable_prompt_optimization_thinking" : undefined,
      request.lora_strength !== undefined ? "lora_strength" : undefined,
      request.quality !== undefined ? "quality" : undefined,
      request.resolution !== undefined ? "resolution" : undefined,
    ].filter((name): name is string => name !== undefined);

    let { width, height } = request;
    if (request.aspect_ratio && width === undefined && height === undefined) ({ width, height } = sizeForAspectRatio(request.aspect_ratio, entry));
    width ??= settings.defaultWidth;
    height ??= settings.defaultHeight;
    const steps = request.steps ?? settings.defaultSteps;
    if (steps > settings.maxSteps) throw field("steps", `${entry.id} runs at most ${settings.maxSteps} steps`);

    let prompt = request.prompt;
    let negativePrompt = request.negative_prompt ?? "";
    if (prompt.length > settings.promptCharacterLimit) throw field("prompt", `${entry.id} takes prompts of at most ${settings.promptCharacterLimit} characters`);
    if (request.style_preset) {
      const style = this.styles.find(request.style_preset);
      if (!style) throw field("style_preset", `unknown style "${request.style_preset}"; GET /image/styles lists them`);
      ({ prompt, negativePrompt } = applyStyle(style, prompt, negativePrompt));
    }
    const plan: ImagePlan = {
      entry,
      prompt,
      negativePrompt,
      width,
      height,
      steps,
      cfgScale: request.cfg_scale ?? settings.defaultCfgScale,
      seed: request.seed ?? randomInt(0, 1_000_000_000),
      variants: request.variants ?? 1,
      safeMode: request.safe_mode,
      format: request.format,
      unsupported,
    };
    checkDimensions(entry, plan.width, plan.height, "width", "height");
    if (request.embed_exif_metadata) {
      plan.exif = JSON.stringify({ model: entry.id, prompt, negative_prompt: negativePrompt, seed: plan.seed, steps, cfg_scale: plan.cfgScale, width, height });
    }
    return plan;
  }

  /**
   * The model an edit names (`model`, or the reference's older `modelId`: an inpaint model or an
   * image model), else the node's default inpaint model, else its default image model.
   */
  editModel(request: EditImageRequest | MultiEditImageRequest): ModelEntry {
    const modelId = request.model ?? request.modelId;
    if (!modelId) return this.models.defaultFor("inpaint") ?? this.defaultModel();
    return this.models.resolve(modelId, "inpaint") ?? this.models.get(modelId, "image");
  }

  /** The model of a standard edit: the one it names when this node has it, else the default edit model (see editModel). */
  standardEditModel(request: StandardEditImageRequest): ModelEntry {
    const named = request.model === undefined ? undefined : (this.models.resolve(request.model, "inpaint") ?? this.models.resolve(request.model, "image"));
    return named ?? this.editModel({ prompt: request.prompt, safe_mode: true });
  }

  /**
   * An edit (/image/edit, /image/multi-edit): the picture resized to the model's size grid at its
   * own aspect ratio (or `aspect_ratio`, cropping the centre), the mask resized with it.
   */
  async planEdit(
    entry: ModelEntry,
    request: EditImageRequest | MultiEditImageRequest,
    picture: { rgb: Uint8Array; width: number; height: number },
    maskBytes: Buffer | undefined,
    /** An exact result size (the standard's `size`), checked against the model's limits and named as this field. */
    size?: { width: number; height: number; field: string },
  ): Promise<ImagePlan> {
    const settings = entry.image;
    if (request.prompt.length > settings.promptCharacterLimit) throw field("prompt", `${entry.id} takes prompts of at most ${settings.promptCharacterLimit} characters`);
    const steps = request.steps ?? settings.defaultSteps;
    if (steps > settings.maxSteps) throw field("steps", `${entry.id} runs at most ${settings.maxSteps} steps`);
    const explicitRatio = request.aspect_ratio !== undefined && request.aspect_ratio !== "auto";
    if (size) checkDimensions(entry, size.width, size.height, size.field, size.field);
    const { width, height } = size ?? sizeForAspectRatio(explicitRatio ? request.aspect_ratio! : `${picture.width}:${picture.height}`, entry);
    const fit = explicitRatio || size ? "cover" : "fill";
    const resized = await resizeRgb(picture.rgb, picture.width, picture.height, width, height, fit);
    let mask: Uint8Array | undefined;
    if (maskBytes) {
      const decoded = await decodeMask(maskBytes, picture, width, height, fit).catch(() => {
        throw field("mask", "the mask could not be decoded (a picture: white or transparent where to repaint)");
      });
      if (decoded.mask === null) {
        throw field("mask", `the mask is ${decoded.sourceWidth}x${decoded.sourceHeight}; it must be the image's size, ${picture.width}x${picture.height}`);
      }
      mask = decoded.mask;
    }
    const unsupported = [
      request.enhance_prompt ? "enhance_prompt" : undefined,
      request.disable_prompt_optimization_thinking !== undefined ? "disable_prompt_optimization_thinking" : undefined,
      request.resolution !== undefined ? "resolution" : undefined,
      "quality" in request && request.quality !== undefined ? "quality" : undefined,
    ].filter((name): name is string => name !== undefined);
    return {
      entry,
      prompt: request.prompt,
      negativePrompt: request.negative_prompt ?? "",
      width,
      height,
      steps,
      cfgScale: request.cfg_scale ?? settings.defaultCfgScale,
      seed: request.seed ?? randomInt(0, 1_000_000_000),
      variants: 1,
      safeMode: request.safe_mode,
      format: request.output_format ?? "png",
      unsupported,
      init: { rgb: resized.rgb, strength: request.strength ?? (entry.type === "inpaint" && mask ? 1 : 0.75), mask },
    };
  }

  /**
   * The standard's edit (/images/edits) as an edit: an exact `size` (auto: the picture's aspect
   * ratio), model names this node lacks meaning its default edit model, and the output options of
   * /images/generations.
   */
  async planStandardEdit(
    entry: ModelEntry,
    request: StandardEditImageRequest,
    picture: { rgb: Uint8Array; width: number; height: number },
    maskBytes: Buffer | undefined,
  ): Promise<ImagePlan> {
    const [width, height] = request.size && request.size !== "auto" ? request.size.split("x").map(Number) : [];
    const plan = await this.planEdit(
      entry,
      { prompt: request.prompt, output_format: request.output_format, safe_mode: true },
      picture,
      maskBytes,
      width !== undefined && height !== undefined ? { width, height, field: "size" } : undefined,
    );
    applyOutputOptions(plan, request, field, this.models.defaultFor("background-removal"));
    if (request.input_fidelity !== undefined) plan.unsupported.push("input_fidelity");
    return plan;
  }

  /** The standard's request: model ids this node lacks fall back to the default image model, as the reference says. */
  planSimple(request: SimpleGenerateImageRequest): ImagePlan {
    const known = this.models.resolve(request.model, "image");
    const entry = known ?? this.defaultModel();
    const settings = entry.image;
    let width = settings.defaultWidth;
    let height = settings.defaultHeight;
    if (request.size && request.size !== "auto") [width, height] = request.size.split("x").map(Number) as [number, number];
    if (request.prompt.length > settings.promptCharacterLimit) throw field("prompt", `${entry.id} takes prompts of at most ${settings.promptCharacterLimit} characters`);
    const plan: ImagePlan = {
      entry,
      prompt: request.prompt,
      negativePrompt: "",
      width,
      height,
      steps: settings.defaultSteps,
      cfgScale: settings.defaultCfgScale,
      seed: randomInt(0, 1_000_000_000),
      variants: 1,
      safeMode: request.moderation !== "low",
      format: request.output_format,
      unsupported: [],
    };
    applyOutputOptions(plan, request, field, this.models.defaultFor("background-removal"));
    if (request.style === "vivid") plan.unsupported.push("style");
    checkDimensions(entry, plan.width, plan.height, "size", "size");
    return plan;
  }

  /** Holds the image model loaded; the route releases the lease when the request ends. */
  acquire(plan: ImagePlan): Promise<ModelLease<"image">> {
    return this.models.acquire(plan.entry.id, "image");
  }

  /** Runs the generation (504 past the request timeout) and encodes the results (cut out by `remover` for a transparent background). */
  async generate(plan: ImagePlan, engine: ImageEngine, clientSignal: AbortSignal, remover?: BackgroundRemovalEngine): Promise<ImageOutcome> {
    if (plan.init && !engine.imageToImage) throw field("model", `${plan.entry.id} cannot edit pictures: its export has no vae_encoder`);
    const result: ImageGenerateResult = await withDeadline(clientSignal, this.requestTimeoutMs, (signal) =>
      engine.generate({
        prompt: plan.prompt,
        negativePrompt: plan.negativePrompt,
        width: plan.width,
        height: plan.height,
        steps: plan.steps,
        cfgScale: plan.cfgScale,
        seed: plan.seed,
        variants: plan.variants,
        safetyCheck: engine.safetyChecker,
        init: plan.init,
        signal,
      }),
    );
    const flagged = result.images.some((i) => i.flagged === null) ? null : result.images.some((i) => i.flagged);
    const blurFlags = result.images.map((i) => plan.safeMode && i.flagged === true);
    const files = await Promise.all(
      result.images.map(async (image, i) => {
        const options = { blur: blurFlags[i], description: plan.exif, quality: plan.quality };
        if (!remover) return encodeImage(image.rgb, image.width, image.height, plan.format, options);
        const cut = await remover.removeBackground({ rgb: image.rgb, width: image.width, height: image.height, signal: clientSignal });
        return encodeImage(cut.rgba, cut.width, cut.height, plan.format, { ...options, channels: 4 });
      }),
    );
    return { engine, result, files, blurred: blurFlags.some(Boolean), flagged };
  }
}

/** A size the model can make: within its largest, on its size grid (a 400 naming the field otherwise). */
function checkDimensions(entry: ModelEntry, width: number, height: number, widthField: string, heightField: string): void {
  const { image } = entry;
  for (const [name, value, max, wire] of [
    ["width", width, image.maxWidth, widthField],
    ["height", height, image.maxHeight, heightField],
  ] as const) {
    if (value > max) throw field(wire, `${entry.id} generates images up to ${image.maxWidth}x${image.maxHeight}; ${name} ${value} is too large`);
    if (value % image.widthHeightDivisor !== 0) throw field(wire, `${name} must be a multiple of ${image.widthHeightDivisor} for ${entry.id} (got ${value})`);
  }
}

/**
 * The standard's output options (/images/generations and /images/edits): output_compression is
 * the lossy encoders' quality (100: the least compression; PNG is lossless), a transparent
 * background is the picture cut out by the node's background-removal model (named as not honoured
 * without one), and a quality other than auto is the model's own.
 */
function applyOutputOptions(
  plan: ImagePlan,
  request: { output_compression?: number | null; background?: string | null; quality?: string | null },
  refuse: (name: string, message: string) => Error,
  remover: ModelEntry | undefined,
): void {
  if (request.output_compression != null) {
    if (plan.format === "png") plan.unsupported.push("output_compression");
    else plan.quality = Math.max(1, request.output_compression);
  }
  if (request.background === "transparent") {
    if (plan.format === "jpeg") throw refuse("background", "a transparent background needs output_format png or webp (JPEG has no alpha channel)");
    if (remover) plan.transparentWith = remover;
    else plan.unsupported.push("background");
  }
  if (request.quality != null && request.quality !== "auto") plan.unsupported.push("quality");
}

/** "16:9" -> a size of about the model's default area, on its size grid and within its limits. */
export function sizeForAspectRatio(ratio: string, entry: ModelEntry): { width: number; height: number } {
  const match = /^(\d+(?:\.\d+)?):(\d+(?:\.\d+)?)$/.exec(ratio.trim());
  if (!match || Number(match[1]) <= 0 || Number(match[2]) <= 0) throw field("aspect_ratio", `"${ratio}" is not an aspect ratio like "16:9"`);
  const r = Number(match[1]) / Number(match[2]);
  const { defaultWidth, defaultHeight, maxWidth, maxHeight, widthHeightDivisor: d } = entry.image;
  const area = defaultWidth * defaultHeight;
  const snap = (x: number, max: number) => Math.max(d, Math.min(Math.floor(max / d) * d, Math.round(x / d) * d));
  return { width: snap(Math.sqrt(area * r), maxWidth), height: snap(Math.sqrt(area / r), maxHeight) };
}
