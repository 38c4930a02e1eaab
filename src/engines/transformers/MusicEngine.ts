import { join } from "node:path";
import { AutoTokenizer, MusicgenForConditionalGeneration, StoppingCriteria, type PreTrainedModel, type PreTrainedTokenizer, type Tensor } from "@huggingface/transformers";
import type { ModelEntry } from "../../config/modelRegistry.js";
import { type ExecutionProviderChoice, resolveExecutionProviders } from "../onnx/resolveExecutionProviders.js";
import type { MusicEngine, MusicOptions } from "../types.js";
import { WorkQueue } from "../WorkQueue.js";
import { readJson } from "./modelConfig.js";
import { transformersDeviceOptions } from "./transformersDeviceOptions.js";
import { engineSessionOptions } from "../onnx/onnxSession.js";
import { configureTransformers } from "./transformersEnv.js";

/** What the engine reads of a MusicGen config.json. */
interface MusicgenConfig {
  model_type?: string;
  audio_encoder?: { sampling_rate?: number; frame_rate?: number };
  decoder?: { num_codebooks?: number };
}

/** What the engine calls: generate() returns the waveform [batch, channels, samples] (its declared type is the token ids'). */
interface MusicgenModel extends PreTrainedModel {
  generate(options: Record<string, unknown>): Promise<Tensor>;
}

/** Stops generation once the job's signal aborts (checked after every decoder step). */
class StopOnAbort extends StoppingCriteria {
  constructor(private readonly signal: AbortSignal | undefined) {
    super();
  }
  override _call(inputIds: number[][]): boolean[] {
    const stop = this.signal?.aborted === true;
    return inputIds.map(() => stop);
  }
}

/**
 * Generation steps for `frames` frames of audio. MusicGen's delay pattern starts codebook k
 * k steps late, and transformers.js keeps the frames every codebook has a code for, so
 * codebooks - 1 more steps than frames.
 */
export function musicgenNewTokens(frames: number, codebooks: number): number {
  return frames + codebooks - 1;
}

/** `samples` cut or zero-padded to exactly `length` (a clip lasts what was asked, to the sample). */
function exactLength(samples: Float32Array, length: number): Float32Array {
  if (samples.length === length) return samples;
  const out = new Float32Array(length);
  out.set(samples.subarray(0, length));
  return out;
}

/**
 * MusicGen text-to-music through transformers.js (the Xenova / onnx-community exports: a T5
 * text encoder, a merged decoder over codebooks, EnCodec's decoder). Sampling, top-k and
 * classifier-free guidance come from the export's generation_config.json; the clip's length
 * sets the steps. One clip at a time per model: generation keeps a few cores busy. The server
 * runs it on a worker thread (MusicWorkerEngine).
 */
export class TransformersMusicEngine implements MusicEngine {
  readonly kind = "music";
  readonly router = "musicgen (transformers.js text-to-audio)";
  private readonly queue: WorkQueue;

  private constructor(
    private readonly model: MusicgenModel,
    private readonly tokenizer: PreTrainedTokenizer,
    readonly sampleRate: number,
    readonly frameRate: number,
    private readonly codebooks: number,
    modelId: string,
    maxWaiting: number,
    readonly executionProvider: ExecutionProviderChoice,
  ) {
    this.queue = new WorkQueue(modelId, maxWaiting);
  }

  static async load(entry: ModelEntry, gpu: "auto" | false): Promise<TransformersMusicEngine> {
    configureTransformers();
    const dir = entry.file!;
    const config = readJson(join(dir, "config.json")) as MusicgenConfig | undefined;
    if (config?.model_type !== "musicgen") throw new Error(`${dir}: not a MusicGen model (config.json model_type "${config?.model_type}")`);
    const sampleRate = config.audio_encoder?.sampling_rate ?? 32000;
    // EnCodec at 32 kHz makes a frame of every 640 samples; older configs omit frame_rate.
    const frameRate = config.audio_encoder?.frame_rate ?? sampleRate / 640;
    const codebooks = config.decoder?.num_codebooks ?? 4;
    const placement = await resolveExecutionProviders(entry.onnx.executionProviders, { gpu });
    const tokenizer = await AutoTokenizer.from_pretrained(dir);
    const model = (await MusicgenForConditionalGeneration.from_pretrained(dir, {
      dtype: entry.onnx.dtype,
      ...transformersDeviceOptions(placement.providers, engineSessionOptions(entry.onnx)),
    })) as unknown as MusicgenModel;
    return new TransformersMusicEngine(model, tokenizer, sampleRate, frameRate, codebooks, entry.id, entry.queue.maxWaiting, placement);
  }

  generate(options: MusicOptions): Promise<Float32Array> {
    return this.queue.run(async () => {
      const frames = Math.max(1, Math.round(options.durationSeconds * this.frameRate));
      const steps = musicgenNewTokens(frames, this.codebooks);
      const inputs = this.tokenizer(options.prompt, { truncation: true });
      let done = 0;
      // generate() hands the streamer the start tokens first, then every step's new tokens.
      let started = false;
      const streamer = {
        put: () => {
          if (!started) {
            started = true;
            return;
          }
          done++;
          options.onProgress?.(Math.min(1, done / steps));
        },
        end: () => undefined,
      };
      const audio = await this.model.generate({
        ...inputs,
        max_new_tokens: steps,
        streamer,
        stopping_criteria: [new StopOnAbort(options.signal)],
      });
      options.signal?.throwIfAborted();
      // [batch, channels, samples]: one prompt, mono.
      return exactLength(audio.data as Float32Array, Math.round(options.durationSeconds * this.sampleRate));
    }, options.signal);
  }

  async dispose(): Promise<void> {
    await this.model.dispose();
  }
}
