import { pipeline, type TextToAudioPipeline } from "@huggingface/transformers";
import type { ModelEntry } from "../../config/modelRegistry.js";
import type { PcmSpeechEngine, SynthesizeOptions } from "../types.js";
import { resolveExecutionProviders, type ExecutionProviderChoice } from "../onnx/resolveExecutionProviders.js";
import { transformersDeviceOptions } from "../transformers/transformersDeviceOptions.js";
import { engineSessionOptions } from "../onnx/onnxSession.js";
import { configureTransformers } from "../transformers/transformersEnv.js";
import { WorkQueue } from "../WorkQueue.js";
import { vitsVoices } from "./vitsVoices.js";
import { everySession, loadWithSessionsOffThread } from "../onnx/OffThreadSession.js";

/**
 * VITS-family models (MMS-TTS and other Xenova/onnx-community exports) through transformers.js'
 * `text-to-audio` pipeline: config.json (model_type "vits", sampling_rate), a character-level
 * tokenizer and onnx/model.onnx (input_ids, attention_mask -> waveform). The model has no speed
 * input, so the service time-stretches; it has one speaker, so every listed voice sounds alike.
 */
export class VitsEngine implements PcmSpeechEngine {
  readonly kind = "speech";
  readonly output = "pcm";
  readonly nativeSpeed = false;
  readonly router = "vits (transformers.js text-to-audio)";
  private readonly queue: WorkQueue;

  private constructor(
    private readonly synthesizer: TextToAudioPipeline,
    readonly sampleRate: number,
    private readonly voiceNames: readonly string[],
    modelId: string,
    maxWaiting: number,
    readonly executionProvider: ExecutionProviderChoice,
  ) {
    this.queue = new WorkQueue(modelId, maxWaiting);
  }

  static async load(entry: ModelEntry, gpu: "auto" | false): Promise<VitsEngine> {
    configureTransformers();
    const placement = await resolveExecutionProviders(entry.onnx.executionProviders, { gpu });
    const synthesizer = (await loadWithSessionsOffThread(everySession, () =>
      pipeline("text-to-audio", entry.file!, {
        dtype: entry.onnx.dtype,
        ...transformersDeviceOptions(placement.providers, engineSessionOptions(entry.onnx)),
      }),
    )) as TextToAudioPipeline;
    const config = synthesizer.model.config as unknown as { sampling_rate?: number };
    return new VitsEngine(synthesizer, config.sampling_rate ?? 16000, vitsVoices(entry), entry.id, entry.queue.maxWaiting, placement);
  }

  voices(): readonly string[] {
    return this.voiceNames;
  }

  async synthesize(options: SynthesizeOptions): Promise<Float32Array> {
    // The tokenizer drops characters outside its vocabulary; text with none left has nothing to say.
    return this.queue.run(async () => {
      const result = (await this.synthesizer(options.text)) as { audio: Float32Array; sampling_rate: number };
      return result.audio;
    }, options.signal);
  }

  async dispose(): Promise<void> {
    await this.synthesizer.dispose();
  }
}
