import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as ort from "onnxruntime-node";
import type { OnnxSettings } from "../../config/backendSettings.js";
import type { VoiceEncoder } from "../types.js";
import { onnxFile, openSession } from "../onnx/onnxSession.js";
import type { SessionLike } from "../onnx/OffThreadSession.js";
import { logMelSpectrogram, STYLETTS2_MEL, type MelOptions } from "./melSpectrogram.js";

/**
 * A speaker (style) encoder: a reference recording -> the 256-value style vector a
 * Kokoro/StyleTTS 2 decoder is conditioned on. The directory layout:
 *
 *   config.json               {"model_type": "style_encoder", "style_dim": 256}
 *   preprocessor_config.json  mel settings (sampling_rate, n_fft, win_length, hop_length, n_mels, mean, std)
 *   onnx/model.onnx           mel [1, n_mels, frames] float32 -> style [1, style_dim] float32
 *
 * What fits: StyleTTS 2's style encoder and prosody (predictor) encoder exported together,
 * whose 128 + 128 outputs concatenated are exactly a Kokoro voice row (acoustic | prosodic
 * style). Kokoro's own encoder was never published, so a clone made with StyleTTS 2's encoder
 * approximates Kokoro's voice space rather than matching it.
 */
export class SpeakerEncoder implements VoiceEncoder {
  private constructor(
    private readonly session: SessionLike,
    private readonly mel: MelOptions,
    readonly styleDim: number,
  ) {}

  get sampleRate(): number {
    return this.mel.sampleRate;
  }

  static async load(dir: string, settings: OnnxSettings, providers: readonly string[]): Promise<SpeakerEncoder> {
    const config = JSON.parse(readFileSync(join(dir, "config.json"), "utf8")) as { style_dim?: number };
    const pre = JSON.parse(readFileSync(join(dir, "preprocessor_config.json"), "utf8")) as Record<string, number | undefined>;
    const mel: MelOptions = {
      sampleRate: pre.sampling_rate ?? STYLETTS2_MEL.sampleRate,
      nFft: pre.n_fft ?? STYLETTS2_MEL.nFft,
      winLength: pre.win_length ?? STYLETTS2_MEL.winLength,
      hopLength: pre.hop_length ?? STYLETTS2_MEL.hopLength,
      nMels: pre.n_mels ?? STYLETTS2_MEL.nMels,
      fMin: pre.f_min ?? 0,
      fMax: pre.f_max ?? undefined,
      logOffset: pre.log_offset ?? STYLETTS2_MEL.logOffset,
      mean: pre.mean ?? STYLETTS2_MEL.mean,
      std: pre.std ?? STYLETTS2_MEL.std,
    };
    const session = await openSession(onnxFile(dir, settings.dtype), settings, providers);
    return new SpeakerEncoder(session, mel, config.style_dim ?? 256);
  }

  async embed(samples: Float32Array): Promise<Float32Array> {
    const { data, frames } = logMelSpectrogram(samples, this.mel);
    const input = new ort.Tensor("float32", data, [1, this.mel.nMels, frames]);
    const outputs = await this.session.run({ [this.session.inputNames[0]!]: input });
    const style = outputs[this.session.outputNames[0]!]!;
    if (style.data.length !== this.styleDim) throw new Error(`speaker encoder returned ${style.data.length} values, expected ${this.styleDim}`);
    return Float32Array.from(style.data as Float32Array);
  }

  async dispose(): Promise<void> {
    await this.session.release();
  }
}
