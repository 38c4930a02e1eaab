import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { CLIPTokenizer } from "@huggingface/transformers";
import * as ort from "onnxruntime-node";
import { convertClipTokenizer } from "../tokenizers/convertClipTokenizer.js";
import { GaussianNoise, toNoiseSeed } from "./GaussianNoise.js";
import { resolveSafetyChecker } from "./safetyChecker.js";
import { createScheduler, guidanceScaleEmbedding, samplerFor, type SamplerName, type Scheduler, type SchedulerConfig } from "./schedulers.js";
import { hasInput, inputInfo, readFloat32, slerp, tensorOf, type SessionInputType } from "./tensors.js";

/**
 * Text-to-image on a Stable Diffusion model in the diffusers/Optimum ONNX export layout
 * (tokenizer/, text_encoder/, unet/, vae_decoder/, scheduler/, optional safety_checker/):
 * CLIP tokenisation, text encoding, the sampler loop with classifier-free guidance, VAE
 * decoding to RGB, and the safety checker; image-to-image and masked edits with the VAE encoder,
 * on an ordinary UNet or an inpainting one (9 input channels). Everything about the export (element types,
 * batch dimensions, the timestep's shape, an LCM guidance embedding input) is read from the
 * sessions' metadata and the component configs, not assumed.
 *
 * Runs anywhere; the server runs it inside worker threads (diffusionWorker.ts) because
 * onnxruntime's `run` holds the thread it is called on.
 */

export interface DiffusionPipelineOptions {
  /** onnxruntime intra-op threads; 0 lets onnxruntime decide. */
  threads: number;
  executionProviders: readonly string[];
  sampler: "auto" | SamplerName;
  /** A safety checker model.onnx (or a directory holding one); undefined: safety_checker/ inside the model, if present. */
  safetyChecker?: string;
}

export interface DenoiseSettings {
  width: number;
  height: number;
  steps: number;
  cfgScale: number;
}

export interface TextToImageOptions extends DenoiseSettings {
  prompt: string;
  negativePrompt: string;
  seed: number;
  /** Run the safety checker on the result (when the model has one). */
  safetyCheck: boolean;
  /** Image-to-image: start from this picture (the size of the result) instead of pure noise. */
  init?: InitImage;
}

/**
 * The picture an image-to-image run starts from. `strength` (0 to 1) is how much of the
 * schedule runs: 1 is text-to-image with the picture's size, small values keep it close.
 * `mask` (one byte per pixel, 255 = repaint) limits the change to part of the picture: the
 * rest is held to the picture's own latents at every step and its own pixels in the result.
 */
export interface InitImage {
  rgb: Uint8Array;
  strength: number;
  mask?: Uint8Array;
}

export interface VideoFramesOptions extends DenoiseSettings {
  prompt: string;
  negativePrompt: string;
  seed: number;
  frames: number;
  /** Frames between keyframes: keyframe k starts from seed + k, frames between slerp the keyframes' noise. */
  keyframeInterval: number;
  /** Image-to-video: the first frame is this picture taken `strength` of the way toward the prompt; the rest as without it. */
  init?: InitImage;
}

export interface DiffusionImage {
  /** Interleaved RGB, width x height x 3. */
  rgb: Uint8Array;
  width: number;
  height: number;
  /** The safety checker's verdict; null when no check ran. */
  nsfw: boolean | null;
}

export interface StepHooks {
  /** Called after each UNet step (and each VAE decode in videos). */
  onProgress?: (done: number, total: number) => void;
  /** Awaited between steps: the place to yield to the event loop and to throw when the run is cancelled. */
  checkpoint?: () => Promise<void>;
}

export interface PipelineInfo {
  sampler: SamplerName;
  latentChannels: number;
  vaeScale: number;
  timestepType: SessionInputType;
  /** Uncond and cond evaluated in one UNet call (the export has a dynamic batch dimension). */
  batchedGuidance: boolean;
  /** LCM-distilled UNet: guidance is an input embedding, never a second pass. */
  guidanceEmbedding: boolean;
  safetyChecker: boolean;
  /** The export has a VAE encoder: image-to-image (edits) can run. */
  imageToImage: boolean;
  /**
   * An inpainting UNet (diffusers' StableDiffusionInpaintPipeline export): its `sample` takes the
   * noisy latents, the mask at latent size and the masked picture's latents (4 + 1 + 4 channels).
   */
  inpainting: boolean;
  executionProviders: readonly string[];
}

interface TextStates {
  cond: Float32Array;
  uncond: Float32Array | null;
  dims: [number, number, number];
}

const readJson = <T>(path: string, fallback: T): T => (existsSync(path) ? (JSON.parse(readFileSync(path, "utf8")) as T) : fallback);

/** CLIP image normalisation (CLIPImageProcessor's defaults, what diffusers' safety checker uses). */
const CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073];
const CLIP_STD = [0.26862954, 0.26130258, 0.27577711];
const CLIP_SIZE = 224;

export class StableDiffusionPipeline {
  private constructor(
    private readonly tokenizer: CLIPTokenizer,
    private readonly maxTokens: number,
    private readonly textEncoder: ort.InferenceSession,
    private readonly unet: ort.InferenceSession,
    private readonly vaeDecoder: ort.InferenceSession,
    private readonly vaeEncoder: ort.InferenceSession | null,
    private readonly safetyChecker: ort.InferenceSession | null,
    private readonly schedulerConfig: SchedulerConfig,
    private readonly vaeScalingFactor: number,
    readonly info: PipelineInfo,
    private readonly timestepCondDim: number,
  ) {}

  static async load(dir: string, options: DiffusionPipelineOptions): Promise<StableDiffusionPipeline> {
    for (const part of ["unet/model.onnx", "text_encoder/model.onnx", "vae_decoder/model.onnx", "tokenizer", "scheduler/scheduler_config.json"]) {
      if (!existsSync(join(dir, part))) throw new Error(`${dir} is not a diffusers ONNX export: ${part} is missing`);
    }
    const modelIndex = readJson<Record<string, unknown>>(join(dir, "model_index.json"), {});
    if ("text_encoder_2" in modelIndex && (modelIndex.text_encoder_2 as unknown[] | null)?.[0]) {
      throw new Error(`${dir}: SDXL exports (text_encoder_2) are not supported yet; use an SD 1.x/2.x, SD-Turbo or LCM export`);
    }
    const sessionOptions: ort.InferenceSession.SessionOptions = {
      executionProviders: [...options.executionProviders],
      graphOptimizationLevel: "all",
      ...(options.threads > 0 ? { intraOpNumThreads: options.threads, interOpNumThreads: 1 } : {}),
    };
    const session = (path: string) => ort.InferenceSession.create(path, sessionOptions);

    const tokenizerDir = join(dir, "tokenizer");
    const { tokenizerJson, tokenizerConfig } = existsSync(join(tokenizerDir, "tokenizer.json"))
      ? {
          tokenizerJson: readJson<object>(join(tokenizerDir, "tokenizer.json"), {}),
          tokenizerConfig: readJson<Record<string, unknown>>(join(tokenizerDir, "tokenizer_config.json"), {}),
        }
      : await convertClipTokenizer(tokenizerDir);
    const tokenizer = new CLIPTokenizer(tokenizerJson, tokenizerConfig);
    const maxTokens = Math.min(Number(tokenizerConfig.model_max_length ?? 77) || 77, 77);

    const [textEncoder, unet, vaeDecoder] = await Promise.all([
      session(join(dir, "text_encoder/model.onnx")),
      session(join(dir, "unet/model.onnx")),
      session(join(dir, "vae_decoder/model.onnx")),
    ]);
    const vaeEncoder = existsSync(join(dir, "vae_encoder/model.onnx")) ? await session(join(dir, "vae_encoder/model.onnx")) : null;
    const safetyPath = resolveSafetyChecker(dir, options.safetyChecker);
    const safetyChecker = safetyPath ? await session(safetyPath) : null;

    const unsupported = unet.inputNames.filter((name) => !["sample", "timestep", "encoder_hidden_states", "timestep_cond"].includes(name));
    if (unsupported.length) throw new Error(`${dir}: the UNet takes inputs Hearth does not feed (${unsupported.join(", ")}); SDXL-style exports are not supported yet`);

    const schedulerConfig = readJson<SchedulerConfig>(join(dir, "scheduler/scheduler_config.json"), {});
    const unetConfig = readJson<{ in_channels?: number; time_cond_proj_dim?: number }>(join(dir, "unet/config.json"), {});
    const vaeConfig = readJson<{ scaling_factor?: number; block_out_channels?: number[]; latent_channels?: number }>(join(dir, "vae_decoder/config.json"), {});
    const sample = inputInfo(unet, "sample");
    const timestep = inputInfo(unet, "timestep");
    const unetChannels = typeof sample.shape[1] === "number" ? sample.shape[1] : (unetConfig.in_channels ?? 4);
    const vaeChannels = vaeConfig.latent_channels ?? 4;
    const inpainting = unetChannels === 2 * vaeChannels + 1;
    if (inpainting && !vaeEncoder) throw new Error(`${dir}: an inpainting UNet (${unetChannels} input channels) needs vae_encoder/ for the masked picture's latents`);
    const latentChannels = inpainting ? vaeChannels : unetChannels;
    const batchedGuidance = typeof sample.shape[0] !== "number" && typeof inputInfo(unet, "encoder_hidden_states").shape[0] !== "number";
    let timestepCondDim = 0;
    if (hasInput(unet, "timestep_cond")) {
      const dim = inputInfo(unet, "timestep_cond").shape[1];
      timestepCondDim = typeof dim === "number" ? dim : (unetConfig.time_cond_proj_dim ?? 256);
    }
    const sampler = options.sampler === "auto" ? samplerFor(schedulerConfig) : options.sampler;
    return new StableDiffusionPipeline(
      tokenizer,
      maxTokens,
      textEncoder,
      unet,
      vaeDecoder,
      vaeEncoder,
      safetyChecker,
      schedulerConfig,
      vaeConfig.scaling_factor ?? 0.18215,
      {
        sampler,
        latentChannels,
        vaeScale: 2 ** ((vaeConfig.block_out_channels?.length ?? 4) - 1),
        timestepType: timestep.type,
        batchedGuidance,
        guidanceEmbedding: timestepCondDim > 0,
        safetyChecker: safetyChecker !== null,
        imageToImage: vaeEncoder !== null,
        inpainting,
        executionProviders: options.executionProviders,
      },
      timestepCondDim,
    );
  }

  /** Prompt token count (CLIP's limit is 77 with the start and end tokens; longer prompts are truncated). */
  countTokens(prompt: string): number {
    const encoded = this.tokenizer(prompt, { truncation: false });
    return (encoded.input_ids as { dims: number[] }).dims.at(-1) ?? 0;
  }

  async textToImage(options: TextToImageOptions, hooks: StepHooks = {}): Promise<DiffusionImage & { timing: { preprocessMs: number; inferenceMs: number } }> {
    const started = performance.now();
    const text = await this.encodeText(options.prompt, options.negativePrompt, this.usesGuidance(options.cfgScale));
    const encoded = performance.now();
    const noise = new GaussianNoise(toNoiseSeed(options.seed));
    const start = noise.sample(this.latentSize(options));
    const conditioning = await this.inpaintConditioning(options.init, options);
    const latents = options.init
      ? await this.denoiseFrom(text, await this.encode(options.init.rgb, options), start, noise, options, options.init, hooks, conditioning)
      : await this.denoise(text, start, noise, options, hooks, 0, options.steps, conditioning);
    let rgb = await this.decode(latents, options);
    if (options.init?.mask) rgb = composite(options.init.rgb, rgb, options.init.mask);
    const nsfw = options.safetyCheck && this.safetyChecker ? await this.checkSafety(rgb, options.width, options.height) : null;
    return { rgb, width: options.width, height: options.height, nsfw, timing: { preprocessMs: encoded - started, inferenceMs: performance.now() - encoded } };
  }

  /**
   * Text-to-video by noise interpolation: keyframe k starts from the noise of seed + k, the
   * frames between two keyframes start from the slerp of their noises, and every frame is
   * denoised with the same text states and sampler noise, so neighbouring frames stay close
   * and the picture drifts smoothly from one keyframe to the next.
   */
  async generateFrames(options: VideoFramesOptions, onFrame: (rgb: Uint8Array, index: number) => void | Promise<void>, hooks: StepHooks = {}): Promise<void> {
    const text = await this.encodeText(options.prompt, options.negativePrompt, this.usesGuidance(options.cfgScale));
    const size = this.latentSize(options);
    const keyNoise = new Map<number, Float32Array>();
    const keyframe = (k: number) => {
      let noise = keyNoise.get(k);
      if (!noise) {
        noise = new GaussianNoise(toNoiseSeed(options.seed + k)).sample(size);
        keyNoise.set(k, noise);
        keyNoise.delete(k - 2);
      }
      return noise;
    };
    const interval = Math.max(1, options.keyframeInterval);
    const perFrame = options.steps + 1;
    // An inpainting UNet repaints everything on frames generated from noise; the first frame of image-to-video keeps the picture's own conditioning.
    const fromNoise = await this.inpaintConditioning(undefined, options);
    const fromPicture = options.init ? await this.inpaintConditioning(options.init, options) : undefined;
    const total = options.frames * perFrame;
    for (let f = 0; f < options.frames; f++) {
      const k = Math.floor(f / interval);
      const u = (f % interval) / interval;
      const start = u === 0 ? keyframe(k) : slerp(keyframe(k), keyframe(k + 1), u);
      // One sampler-noise stream for every frame: ancestral noise that changed per frame would flicker.
      const samplerNoise = new GaussianNoise(toNoiseSeed(options.seed ^ 0x5bd1e995));
      const frameHooks: StepHooks = { checkpoint: hooks.checkpoint, onProgress: (done) => hooks.onProgress?.(f * perFrame + done, total) };
      const latents =
        f === 0 && options.init
          ? await this.denoiseFrom(text, await this.encode(options.init.rgb, options), start, samplerNoise, options, options.init, frameHooks, fromPicture)
          : await this.denoise(text, start, samplerNoise, options, frameHooks, 0, options.steps, fromNoise);
      const rgb = await this.decode(latents, options);
      hooks.onProgress?.((f + 1) * perFrame, total);
      await onFrame(rgb, f);
    }
  }

  private usesGuidance(cfgScale: number): boolean {
    return cfgScale > 1 && !this.info.guidanceEmbedding;
  }

  private latentSize(size: { width: number; height: number }): number {
    return this.info.latentChannels * (size.height / this.info.vaeScale) * (size.width / this.info.vaeScale);
  }

  private async encodeText(prompt: string, negativePrompt: string, guidance: boolean): Promise<TextStates> {
    const texts = guidance ? [negativePrompt, prompt] : [prompt];
    const encoded = this.tokenizer(texts, { padding: "max_length", max_length: this.maxTokens, truncation: true });
    const ids = Array.from(encoded.input_ids.data as BigInt64Array, Number);
    const idType = inputInfo(this.textEncoder, "input_ids").type;
    const states: Float32Array[] = [];
    let hidden = 0;
    // One row at a time: some exports fix the text encoder's batch at 1.
    for (let row = 0; row < texts.length; row++) {
      const input = tensorOf(idType, ids.slice(row * this.maxTokens, (row + 1) * this.maxTokens), [1, this.maxTokens]);
      const output = await this.textEncoder.run({ input_ids: input });
      const lastHidden = output.last_hidden_state ?? output[this.textEncoder.outputNames[0]!]!;
      hidden = lastHidden.dims[2]!;
      states.push(Float32Array.from(readFloat32(lastHidden)));
    }
    return guidance ? { uncond: states[0]!, cond: states[1]!, dims: [1, this.maxTokens, hidden] } : { uncond: null, cond: states[0]!, dims: [1, this.maxTokens, hidden] };
  }

  private timestepTensor(t: number, batch: number): ort.Tensor {
    const { type, shape } = inputInfo(this.unet, "timestep");
    if (shape.length === 0) return tensorOf(type, [t], []);
    const length = typeof shape[0] === "number" ? shape[0] : batch;
    return tensorOf(type, new Array<number>(length).fill(t), [length]);
  }

  /**
   * One UNet call. An inpainting UNet's sample is, per batch row, the latents followed by the
   * conditioning channels (mask, masked picture's latents), which stay the same for every row.
   */
  private async runUnet(
    latents: Float32Array,
    text: Float32Array,
    textDims: readonly number[],
    batch: number,
    t: number,
    settings: DenoiseSettings,
    conditioning: Float32Array | undefined,
  ): Promise<Float32Array> {
    const sampleType = inputInfo(this.unet, "sample").type;
    const textType = inputInfo(this.unet, "encoder_hidden_states").type;
    const h = settings.height / this.info.vaeScale;
    const w = settings.width / this.info.vaeScale;
    let sample = latents;
    let channels = this.info.latentChannels;
    if (conditioning) {
      const row = latents.length / batch;
      sample = new Float32Array(batch * (row + conditioning.length));
      for (let b = 0; b < batch; b++) {
        sample.set(latents.subarray(b * row, (b + 1) * row), b * (row + conditioning.length));
        sample.set(conditioning, b * (row + conditioning.length) + row);
      }
      channels += conditioning.length / (h * w);
    }
    const feeds: Record<string, ort.Tensor> = {
      sample: tensorOf(sampleType, sample, [batch, channels, h, w]),
      timestep: this.timestepTensor(t, batch),
      encoder_hidden_states: tensorOf(textType, text, [batch, textDims[1]!, textDims[2]!]),
    };
    if (this.info.guidanceEmbedding) {
      const embedding = guidanceScaleEmbedding(settings.cfgScale, this.timestepCondDim);
      const rows = new Float32Array(batch * embedding.length);
      for (let b = 0; b < batch; b++) rows.set(embedding, b * embedding.length);
      feeds.timestep_cond = tensorOf(inputInfo(this.unet, "timestep_cond").type, rows, [batch, embedding.length]);
    }
    const output = await this.unet.run(feeds);
    return readFloat32(output.out_sample ?? output[this.unet.outputNames[0]!]!);
  }

  private async denoise(
    text: TextStates,
    startNoise: Float32Array,
    samplerNoise: GaussianNoise,
    settings: DenoiseSettings,
    hooks: StepHooks,
    progressOffset: number,
    progressTotal: number,
    conditioning?: Float32Array,
  ): Promise<Float32Array> {
    const scheduler = createScheduler(this.info.sampler, this.schedulerConfig, settings.steps);
    let latents: Float32Array = Float32Array.from(startNoise, (x) => x * scheduler.initNoiseSigma);
    for (let step = 0; step < scheduler.timesteps.length; step++) {
      await hooks.checkpoint?.();
      const prediction = await this.predict(text, latents, scheduler, step, settings, conditioning);
      latents = scheduler.step(step, prediction, latents, samplerNoise);
      hooks.onProgress?.(progressOffset + step + 1, progressTotal);
    }
    return latents;
  }

  /** The UNet's noise prediction for `latents` at `step`, with classifier-free guidance when there is an unconditional pass. */
  private async predict(
    text: TextStates,
    latents: Float32Array,
    scheduler: Scheduler,
    step: number,
    settings: DenoiseSettings,
    conditioning: Float32Array | undefined,
  ): Promise<Float32Array> {
    const size = latents.length;
    // The sampler's input scaling applies to the latents only, never to the inpainting conditioning.
    const scale = scheduler.inputScale(step);
    const scaled = scale === 1 ? latents : latents.map((x) => x * scale);
    const t = scheduler.timesteps[step]!;
    if (!text.uncond) return this.runUnet(scaled, text.cond, text.dims, 1, t, settings, conditioning);
    let uncondOut: Float32Array;
    let condOut: Float32Array;
    if (this.info.batchedGuidance) {
      const pair = new Float32Array(size * 2);
      pair.set(scaled, 0);
      pair.set(scaled, size);
      const states = new Float32Array(text.cond.length * 2);
      states.set(text.uncond, 0);
      states.set(text.cond, text.cond.length);
      const both = await this.runUnet(pair, states, text.dims, 2, t, settings, conditioning);
      uncondOut = both.subarray(0, size);
      condOut = both.subarray(size);
    } else {
      uncondOut = await this.runUnet(scaled, text.uncond, text.dims, 1, t, settings, conditioning);
      condOut = await this.runUnet(scaled, text.cond, text.dims, 1, t, settings, conditioning);
    }
    const prediction = new Float32Array(size);
    for (let i = 0; i < size; i++) prediction[i] = uncondOut[i]! + settings.cfgScale * (condOut[i]! - uncondOut[i]!);
    return prediction;
  }

  /**
   * Image-to-image: the picture's latents noised to the step `strength` leaves, then the rest of
   * the schedule. With a mask on an ordinary UNet, the kept part is reset to the picture's
   * latents (noised to the next step) after every step, so only the masked part is generated;
   * an inpainting UNet sees the mask and the kept part in its `conditioning` instead.
   */
  private async denoiseFrom(
    text: TextStates,
    original: Float32Array,
    noise: Float32Array,
    samplerNoise: GaussianNoise,
    settings: DenoiseSettings,
    init: InitImage,
    hooks: StepHooks,
    conditioning: Float32Array | undefined,
  ): Promise<Float32Array> {
    const scheduler = createScheduler(this.info.sampler, this.schedulerConfig, settings.steps);
    const steps = scheduler.timesteps.length;
    const first = Math.min(steps - 1, Math.max(0, steps - Math.round(steps * Math.min(1, Math.max(0, init.strength)))));
    const keep = init.mask && !conditioning ? latentMask(init.mask, settings.width, settings.height, this.info.vaeScale, this.info.latentChannels) : undefined;
    let latents = scheduler.noiseTo(first, original, noise);
    for (let step = first; step < steps; step++) {
      await hooks.checkpoint?.();
      latents = scheduler.step(step, await this.predict(text, latents, scheduler, step, settings, conditioning), latents, samplerNoise);
      if (keep) {
        const known = step + 1 < steps ? scheduler.noiseTo(step + 1, original, noise) : original;
        for (let i = 0; i < latents.length; i++) latents[i] = keep[i]! * latents[i]! + (1 - keep[i]!) * known[i]!;
      }
      hooks.onProgress?.(step - first + 1, steps - first);
    }
    return latents;
  }

  /**
   * What an inpainting UNet takes besides the latents, planar [1 + C, h, w]: the mask at latent
   * size (1 = repaint) and the latents of the picture with the part to repaint blanked. As in
   * diffusers, the pixel mask is binarised at one half; a latent cell is repainted when at least
   * half its pixels are. No picture (text-to-image, or frames from noise): everything is repainted.
   * Undefined for an ordinary UNet.
   */
  private async inpaintConditioning(init: InitImage | undefined, size: { width: number; height: number }): Promise<Float32Array | undefined> {
    if (!this.info.inpainting) return undefined;
    const plane = size.width * size.height;
    const repaint = (p: number) => !init?.mask || init.mask[p]! >= 128;
    const planar = new Float32Array(3 * plane);
    for (let p = 0; p < plane; p++) {
      if (repaint(p)) continue;
      for (let c = 0; c < 3; c++) planar[c * plane + p] = init!.rgb[p * 3 + c]! / 127.5 - 1;
    }
    const maskedLatents = await this.encodePlanar(planar, size);
    const binary = new Uint8Array(plane);
    for (let p = 0; p < plane; p++) binary[p] = repaint(p) ? 255 : 0;
    const cells = latentMask(binary, size.width, size.height, this.info.vaeScale, 1);
    const out = new Float32Array(cells.length + maskedLatents.length);
    for (let i = 0; i < cells.length; i++) out[i] = cells[i]! >= 0.5 ? 1 : 0;
    out.set(maskedLatents, cells.length);
    return out;
  }

  /** The VAE encoder's latents of a picture (interleaved RGB bytes), scaled as the UNet sees them. */
  private encode(rgb: Uint8Array, size: { width: number; height: number }): Promise<Float32Array> {
    const plane = size.width * size.height;
    const planar = new Float32Array(3 * plane);
    for (let p = 0; p < plane; p++) for (let c = 0; c < 3; c++) planar[c * plane + p] = rgb[p * 3 + c]! / 127.5 - 1;
    return this.encodePlanar(planar, size);
  }

  /** The VAE encoder's latents of a planar picture in [-1, 1], scaled as the UNet sees them. */
  private async encodePlanar(planar: Float32Array, size: { width: number; height: number }): Promise<Float32Array> {
    if (!this.vaeEncoder) throw new Error("this export has no vae_encoder: image-to-image needs one");
    const input = inputInfo(this.vaeEncoder, "sample");
    const output = await this.vaeEncoder.run({ sample: tensorOf(input.type, planar, [1, 3, size.height, size.width]) });
    const latents = readFloat32(output.latent_sample ?? output[this.vaeEncoder.outputNames[0]!]!);
    return Float32Array.from(latents, (x) => x * this.vaeScalingFactor);
  }

  private async decode(latents: Float32Array, size: { width: number; height: number }): Promise<Uint8Array> {
    const input = inputInfo(this.vaeDecoder, "latent_sample");
    const scaled = latents.map((x) => x / this.vaeScalingFactor);
    const dims = [1, this.info.latentChannels, size.height / this.info.vaeScale, size.width / this.info.vaeScale];
    const output = await this.vaeDecoder.run({ latent_sample: tensorOf(input.type, scaled, dims) });
    const image = output.sample ?? output[this.vaeDecoder.outputNames[0]!]!;
    const [, channels, height, width] = image.dims as [number, number, number, number];
    if (height !== size.height || width !== size.width || channels < 3) throw new Error(`the VAE decoder returned [${image.dims}] for a ${size.width}x${size.height} image`);
    const planar = readFloat32(image);
    const plane = width * height;
    const rgb = new Uint8Array(plane * 3);
    for (let p = 0; p < plane; p++) {
      for (let c = 0; c < 3; c++) {
        const v = planar[c * plane + p]! / 2 + 0.5;
        rgb[p * 3 + c] = Math.round(Math.min(Math.max(v, 0), 1) * 255);
      }
    }
    return rgb;
  }

  /** diffusers' safety checker: CLIP-normalised 224x224 crop plus the image itself -> has_nsfw_concepts. */
  private async checkSafety(rgb: Uint8Array, width: number, height: number): Promise<boolean> {
    const checker = this.safetyChecker!;
    const clipInput = clipPreprocess(rgb, width, height);
    const feeds: Record<string, ort.Tensor> = { clip_input: tensorOf(inputInfo(checker, "clip_input").type, clipInput, [1, 3, CLIP_SIZE, CLIP_SIZE]) };
    if (hasInput(checker, "images"))
      feeds.images = tensorOf(
        inputInfo(checker, "images").type,
        Float32Array.from(rgb, (v) => v / 255),
        [1, height, width, 3],
      );
    const output = await checker.run(feeds);
    const verdict = output.has_nsfw_concepts ?? Object.values(output).find((t) => t.type === "bool");
    if (!verdict) throw new Error(`the safety checker has no boolean output (outputs: ${checker.outputNames.join(", ")})`);
    return Boolean((verdict.data as ArrayLike<unknown>)[0]);
  }

  async dispose(): Promise<void> {
    await Promise.all([this.textEncoder, this.unet, this.vaeDecoder, this.vaeEncoder, this.safetyChecker].map((s) => s?.release()));
  }
}

/** A pixel mask (255 = repaint) as latent weights: the share of each latent cell's pixels to repaint, repeated per channel. */
function latentMask(mask: Uint8Array, width: number, height: number, vaeScale: number, channels: number): Float32Array {
  const w = width / vaeScale;
  const h = height / vaeScale;
  const cell = new Float32Array(w * h);
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) cell[Math.floor(y / vaeScale) * w + Math.floor(x / vaeScale)]! += mask[y * width + x]! / 255;
  const out = new Float32Array(channels * w * h);
  for (let c = 0; c < channels; c++) for (let i = 0; i < w * h; i++) out[c * w * h + i] = cell[i]! / (vaeScale * vaeScale);
  return out;
}

/** The generated pixels where the mask says repaint, the picture's own elsewhere (blended by the mask's value). */
function composite(original: Uint8Array, generated: Uint8Array, mask: Uint8Array): Uint8Array {
  const out = new Uint8Array(generated.length);
  for (let p = 0; p < mask.length; p++) {
    const a = mask[p]! / 255;
    for (let c = 0; c < 3; c++) out[p * 3 + c] = Math.round(a * generated[p * 3 + c]! + (1 - a) * original[p * 3 + c]!);
  }
  return out;
}

/** Shortest side to 224 (bilinear), centre crop, CLIP mean/std: planar [3, 224, 224]. */
export function clipPreprocess(rgb: Uint8Array, width: number, height: number): Float32Array {
  const scale = CLIP_SIZE / Math.min(width, height);
  const scaledW = Math.max(CLIP_SIZE, Math.round(width * scale));
  const scaledH = Math.max(CLIP_SIZE, Math.round(height * scale));
  const offsetX = Math.floor((scaledW - CLIP_SIZE) / 2);
  const offsetY = Math.floor((scaledH - CLIP_SIZE) / 2);
  const out = new Float32Array(3 * CLIP_SIZE * CLIP_SIZE);
  const plane = CLIP_SIZE * CLIP_SIZE;
  for (let y = 0; y < CLIP_SIZE; y++) {
    const sy = Math.min(Math.max(((y + offsetY + 0.5) / scaledH) * height - 0.5, 0), height - 1);
    const y0 = Math.floor(sy);
    const y1 = Math.min(y0 + 1, height - 1);
    const fy = sy - y0;
    for (let x = 0; x < CLIP_SIZE; x++) {
      const sx = Math.min(Math.max(((x + offsetX + 0.5) / scaledW) * width - 0.5, 0), width - 1);
      const x0 = Math.floor(sx);
      const x1 = Math.min(x0 + 1, width - 1);
      const fx = sx - x0;
      for (let c = 0; c < 3; c++) {
        const at = (xx: number, yy: number) => rgb[(yy * width + xx) * 3 + c]!;
        const top = at(x0, y0) * (1 - fx) + at(x1, y0) * fx;
        const bottom = at(x0, y1) * (1 - fx) + at(x1, y1) * fx;
        const value = (top * (1 - fy) + bottom * fy) / 255;
        out[c * plane + y * CLIP_SIZE + x] = (value - CLIP_MEAN[c]!) / CLIP_STD[c]!;
      }
    }
  }
  return out;
}
