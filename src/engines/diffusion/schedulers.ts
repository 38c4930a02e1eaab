import type { GaussianNoise } from "./GaussianNoise.js";

/**
 * The samplers of the diffusers schedulers Hearth runs, ported from diffusers
 * (EulerDiscreteScheduler, EulerAncestralDiscreteScheduler, LCMScheduler) and driven by the
 * model's own scheduler/scheduler_config.json: the beta schedule, the timestep spacing and
 * the prediction type come from the export, not from assumptions.
 */

/** The fields of scheduler_config.json that matter here (diffusers' names). */
export interface SchedulerConfig {
  _class_name?: string;
  num_train_timesteps?: number;
  beta_start?: number;
  beta_end?: number;
  beta_schedule?: "linear" | "scaled_linear" | "squaredcos_cap_v2";
  trained_betas?: number[] | null;
  prediction_type?: "epsilon" | "v_prediction" | "sample";
  timestep_spacing?: "linspace" | "leading" | "trailing";
  steps_offset?: number;
  use_karras_sigmas?: boolean;
  interpolation_type?: "linear";
  rescale_betas_zero_snr?: boolean;
  set_alpha_to_one?: boolean;
  /** LCM */
  original_inference_steps?: number;
  timestep_scaling?: number;
  clip_sample?: boolean;
  clip_sample_range?: number;
}

export type SamplerName = "euler" | "euler_ancestral" | "lcm";

/** The sampler a scheduler config implies: LCM and Euler ancestral are kept, anything else (PNDM, DDIM, Euler...) runs Euler on the same betas. */
export function samplerFor(config: SchedulerConfig): SamplerName {
  if (config._class_name === "LCMScheduler") return "lcm";
  if (config._class_name === "EulerAncestralDiscreteScheduler") return "euler_ancestral";
  return "euler";
}

export interface Scheduler {
  readonly name: SamplerName;
  /** The timestep the UNet sees at each step. */
  readonly timesteps: readonly number[];
  /** Initial latents are unit noise times this. */
  readonly initNoiseSigma: number;
  /** The factor the latents are multiplied by before the UNet at `step`. */
  inputScale(step: number): number;
  /** One denoising step: the latents after `step`, given the model's output for them. */
  step(step: number, modelOutput: Float32Array, sample: Float32Array, noise: GaussianNoise): Float32Array;
  /** A clean sample (image latents) noised to where the schedule is at the start of `step` (image-to-image). */
  noiseTo(step: number, original: Float32Array, noise: Float32Array): Float32Array;
}

export function createScheduler(name: SamplerName, config: SchedulerConfig, steps: number): Scheduler {
  if (config.rescale_betas_zero_snr) throw new Error("scheduler_config.json: rescale_betas_zero_snr is not supported");
  const alphasCumprod = cumulativeAlphas(config);
  return name === "lcm" ? new LcmScheduler(config, alphasCumprod, steps) : new EulerScheduler(name, config, alphasCumprod, steps);
}

export function betaSchedule(config: SchedulerConfig): Float64Array {
  const n = config.num_train_timesteps ?? 1000;
  if (config.trained_betas?.length) return Float64Array.from(config.trained_betas);
  const start = config.beta_start ?? 0.0001;
  const end = config.beta_end ?? 0.02;
  switch (config.beta_schedule ?? "linear") {
    case "linear":
      return linspace(start, end, n);
    case "scaled_linear":
      return linspace(Math.sqrt(start), Math.sqrt(end), n).map((b) => b * b);
    case "squaredcos_cap_v2": {
      const alphaBar = (t: number) => Math.cos(((t + 0.008) / 1.008) * (Math.PI / 2)) ** 2;
      return Float64Array.from({ length: n }, (_, i) => Math.min(1 - alphaBar((i + 1) / n) / alphaBar(i / n), 0.999));
    }
    default:
      throw new Error(`scheduler_config.json: beta_schedule "${String(config.beta_schedule)}" is not supported`);
  }
}

export function cumulativeAlphas(config: SchedulerConfig): Float64Array {
  const betas = betaSchedule(config);
  const out = new Float64Array(betas.length);
  let product = 1;
  for (let i = 0; i < betas.length; i++) {
    product *= 1 - betas[i]!;
    out[i] = product;
  }
  return out;
}

export function linspace(start: number, end: number, count: number): Float64Array {
  if (count === 1) return Float64Array.of(start);
  return Float64Array.from({ length: count }, (_, i) => start + ((end - start) * i) / (count - 1));
}

/** numpy.arange(start, stop, step) for a negative step, with numpy's length rule. */
function arangeDown(start: number, stop: number, step: number): number[] {
  const length = Math.max(0, Math.ceil((stop - start) / step));
  return Array.from({ length }, (_, i) => start + i * step);
}

/** Python's round(): halves to even, as numpy rounds the spacings. */
function roundHalfEven(x: number): number {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** The training timesteps a run of `steps` visits, per diffusers' `timestep_spacing`. */
export function spacedTimesteps(config: SchedulerConfig, steps: number): number[] {
  const n = config.num_train_timesteps ?? 1000;
  if (steps < 1 || steps > n) throw new Error(`steps must be between 1 and ${n}`);
  switch (config.timestep_spacing ?? "linspace") {
    case "linspace":
      return [...linspace(0, n - 1, steps)].reverse();
    case "leading": {
      const ratio = Math.floor(n / steps);
      return Array.from({ length: steps }, (_, i) => roundHalfEven((steps - 1 - i) * ratio) + (config.steps_offset ?? 0));
    }
    case "trailing": {
      const ratio = n / steps;
      return arangeDown(n, 0, -ratio).map((t) => roundHalfEven(t) - 1);
    }
    default:
      throw new Error(`scheduler_config.json: timestep_spacing "${String(config.timestep_spacing)}" is not supported`);
  }
}

/** numpy.interp over the integer grid 0..table.length-1. */
function interpolate(x: number, table: Float64Array): number {
  if (x <= 0) return table[0]!;
  if (x >= table.length - 1) return table[table.length - 1]!;
  const i = Math.floor(x);
  const frac = x - i;
  return table[i]! * (1 - frac) + table[i + 1]! * frac;
}

/** Inverse of the sigma table (diffusers' `_sigma_to_t`): the fractional timestep of a sigma. */
function sigmaToTimestep(sigma: number, logSigmas: Float64Array): number {
  const logSigma = Math.log(Math.max(sigma, 1e-10));
  // logSigmas increase with t.
  let low = 0;
  while (low < logSigmas.length - 2 && logSigmas[low + 1]! <= logSigma) low++;
  const lowValue = logSigmas[low]!;
  const highValue = logSigmas[low + 1]!;
  const w = Math.min(Math.max((lowValue - logSigma) / (lowValue - highValue), 0), 1);
  return (1 - w) * low + w * (low + 1);
}

class EulerScheduler implements Scheduler {
  readonly timesteps: number[];
  /** One sigma per step, then 0. */
  readonly sigmas: number[];
  readonly initNoiseSigma: number;
  private readonly prediction: NonNullable<SchedulerConfig["prediction_type"]>;

  constructor(
    readonly name: "euler" | "euler_ancestral",
    config: SchedulerConfig,
    alphasCumprod: Float64Array,
    steps: number,
  ) {
    this.prediction = config.prediction_type ?? "epsilon";
    const table = alphasCumprod.map((a) => Math.sqrt((1 - a) / a));
    let timesteps = spacedTimesteps(config, steps);
    let sigmas = timesteps.map((t) => interpolate(t, table));
    if (config.use_karras_sigmas && name === "euler") {
      const rho = 7;
      const sigmaMin = sigmas[sigmas.length - 1]!;
      const sigmaMax = sigmas[0]!;
      const minInv = sigmaMin ** (1 / rho);
      const maxInv = sigmaMax ** (1 / rho);
      sigmas = [...linspace(0, 1, steps)].map((ramp) => (maxInv + ramp * (minInv - maxInv)) ** rho);
      const logSigmas = table.map((s) => Math.log(s));
      timesteps = sigmas.map((s) => sigmaToTimestep(s, logSigmas));
    }
    this.timesteps = timesteps;
    this.sigmas = [...sigmas, 0];
    const maxSigma = Math.max(...sigmas);
    const spacing = config.timestep_spacing ?? "linspace";
    this.initNoiseSigma = spacing === "linspace" || spacing === "trailing" ? maxSigma : Math.sqrt(maxSigma * maxSigma + 1);
  }

  noiseTo(step: number, original: Float32Array, noise: Float32Array): Float32Array {
    const sigma = this.sigmas[step]!;
    return Float32Array.from(original, (x, i) => x + noise[i]! * sigma);
  }

  inputScale(step: number): number {
    const sigma = this.sigmas[step]!;
    return 1 / Math.sqrt(sigma * sigma + 1);
  }

  step(step: number, modelOutput: Float32Array, sample: Float32Array, noise: GaussianNoise): Float32Array {
    const sigma = this.sigmas[step]!;
    const next = this.sigmas[step + 1]!;
    const out = new Float32Array(sample.length);
    const vScale = -sigma / Math.sqrt(sigma * sigma + 1);
    const vSample = 1 / (sigma * sigma + 1);
    const original = (i: number) =>
      this.prediction === "epsilon" ? sample[i]! - sigma * modelOutput[i]! : this.prediction === "v_prediction" ? modelOutput[i]! * vScale + sample[i]! * vSample : modelOutput[i]!;
    if (this.name === "euler") {
      const dt = next - sigma;
      for (let i = 0; i < out.length; i++) out[i] = sample[i]! + ((sample[i]! - original(i)) / sigma) * dt;
      return out;
    }
    const sigmaUp = Math.sqrt((next * next * (sigma * sigma - next * next)) / (sigma * sigma));
    const sigmaDown = Math.sqrt(next * next - sigmaUp * sigmaUp);
    const dt = sigmaDown - sigma;
    for (let i = 0; i < out.length; i++) out[i] = sample[i]! + ((sample[i]! - original(i)) / sigma) * dt;
    if (sigmaUp > 0) for (let i = 0; i < out.length; i++) out[i]! += noise.normal() * sigmaUp;
    return out;
  }
}

class LcmScheduler implements Scheduler {
  readonly name = "lcm" as const;
  readonly timesteps: number[];
  readonly initNoiseSigma = 1;
  private readonly prediction: NonNullable<SchedulerConfig["prediction_type"]>;
  private readonly finalAlpha: number;
  private readonly timestepScaling: number;
  private readonly clipRange: number | undefined;

  constructor(
    config: SchedulerConfig,
    private readonly alphasCumprod: Float64Array,
    steps: number,
  ) {
    this.prediction = config.prediction_type ?? "epsilon";
    this.finalAlpha = config.set_alpha_to_one ? 1 : alphasCumprod[0]!;
    this.timestepScaling = config.timestep_scaling ?? 10;
    this.clipRange = config.clip_sample ? (config.clip_sample_range ?? 1) : undefined;
    const n = config.num_train_timesteps ?? 1000;
    const original = config.original_inference_steps ?? 50;
    if (steps > original) throw new Error(`an LCM model runs at most ${original} steps (original_inference_steps)`);
    const k = Math.floor(n / original);
    const origin = Array.from({ length: original }, (_, i) => (i + 1) * k - 1).reverse();
    this.timesteps = [...linspace(0, original, steps + 1)].slice(0, steps).map((x) => origin[Math.floor(x)]!);
  }

  noiseTo(step: number, original: Float32Array, noise: Float32Array): Float32Array {
    const alpha = this.alphasCumprod[this.timesteps[step]!]!;
    return Float32Array.from(original, (x, i) => Math.sqrt(alpha) * x + Math.sqrt(1 - alpha) * noise[i]!);
  }

  inputScale(): number {
    return 1;
  }

  step(step: number, modelOutput: Float32Array, sample: Float32Array, noise: GaussianNoise): Float32Array {
    const t = this.timesteps[step]!;
    const prevT = this.timesteps[step + 1];
    const alpha = this.alphasCumprod[t]!;
    const alphaPrev = prevT === undefined ? this.finalAlpha : this.alphasCumprod[prevT]!;
    const beta = 1 - alpha;
    const sigmaData = 0.5;
    const scaled = t * this.timestepScaling;
    const cSkip = (sigmaData * sigmaData) / (scaled * scaled + sigmaData * sigmaData);
    const cOut = scaled / Math.sqrt(scaled * scaled + sigmaData * sigmaData);
    const out = new Float32Array(sample.length);
    const last = step === this.timesteps.length - 1;
    for (let i = 0; i < out.length; i++) {
      let original =
        this.prediction === "epsilon"
          ? (sample[i]! - Math.sqrt(beta) * modelOutput[i]!) / Math.sqrt(alpha)
          : this.prediction === "v_prediction"
            ? Math.sqrt(alpha) * sample[i]! - Math.sqrt(beta) * modelOutput[i]!
            : modelOutput[i]!;
      if (this.clipRange !== undefined) original = Math.min(Math.max(original, -this.clipRange), this.clipRange);
      const denoised = cOut * original + cSkip * sample[i]!;
      out[i] = last ? denoised : Math.sqrt(alphaPrev) * denoised + Math.sqrt(1 - alphaPrev) * noise.normal();
    }
    return out;
  }
}

/** LCM-distilled UNets take the guidance scale as an embedding (diffusers' get_guidance_scale_embedding). */
export function guidanceScaleEmbedding(guidanceScale: number, dim: number): Float32Array {
  const w = (guidanceScale - 1) * 1000;
  const half = Math.floor(dim / 2);
  const out = new Float32Array(dim);
  const factor = Math.log(10000) / (half - 1);
  for (let i = 0; i < half; i++) {
    const angle = w * Math.exp(-factor * i);
    out[i] = Math.sin(angle);
    out[half + i] = Math.cos(angle);
  }
  return out;
}
