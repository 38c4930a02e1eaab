import { type BackgroundRemovalPipeline, pipeline, RawImage } from "@huggingface/transformers";
import type { ModelEntry } from "../../config/modelRegistry.js";
import { type ExecutionProviderChoice, resolveExecutionProviders } from "../onnx/resolveExecutionProviders.js";
import type { BackgroundRemovalEngine } from "../types.js";
import { WorkQueue } from "../WorkQueue.js";
import { transformersDeviceOptions } from "./transformersDeviceOptions.js";
import { engineSessionOptions } from "../onnx/onnxSession.js";
import { configureTransformers } from "./transformersEnv.js";
import { everySession, loadWithSessionsOffThread } from "../onnx/OffThreadSession.js";

/**
 * Background removal through transformers.js' `background-removal` pipeline: MODNet, BiRefNet,
 * ISNet and RMBG-style exports (config.json, preprocessor_config.json, onnx/model.onnx with one
 * image input and a matte output). The model sees the picture at its processor's size; the matte
 * is resized back and becomes the alpha channel of the original pixels.
 */
export class TransformersBackgroundRemovalEngine implements BackgroundRemovalEngine {
  readonly kind = "background";
  readonly router: string;
  private readonly queue: WorkQueue;

  private constructor(
    private readonly segmenter: BackgroundRemovalPipeline,
    modelType: string,
    modelId: string,
    maxWaiting: number,
    readonly executionProvider: ExecutionProviderChoice,
  ) {
    this.router = `${modelType} (transformers.js background-removal)`;
    this.queue = new WorkQueue(modelId, maxWaiting);
  }

  static async load(entry: ModelEntry, gpu: "auto" | false): Promise<TransformersBackgroundRemovalEngine> {
    configureTransformers();
    const placement = await resolveExecutionProviders(entry.onnx.executionProviders, { gpu });
    const segmenter = (await loadWithSessionsOffThread(everySession, () =>
      pipeline("background-removal", entry.file!, {
        dtype: entry.onnx.dtype,
        ...transformersDeviceOptions(placement.providers, engineSessionOptions(entry.onnx)),
      }),
    )) as BackgroundRemovalPipeline;
    const modelType = String((segmenter.model.config as unknown as { model_type?: string }).model_type ?? "matting");
    return new TransformersBackgroundRemovalEngine(segmenter, modelType, entry.id, entry.queue.maxWaiting, placement);
  }

  removeBackground(options: { rgb: Uint8Array; width: number; height: number; signal?: AbortSignal }): Promise<{ rgba: Uint8Array; width: number; height: number }> {
    return this.queue.run(async () => {
      const image = new RawImage(new Uint8ClampedArray(options.rgb.buffer, options.rgb.byteOffset, options.rgb.byteLength), options.width, options.height, 3);
      const result = (await this.segmenter(image)) as RawImage;
      return { rgba: new Uint8Array(result.data.buffer, result.data.byteOffset, result.data.byteLength), width: result.width, height: result.height };
    }, options.signal);
  }

  async dispose(): Promise<void> {
    await this.segmenter.dispose();
  }
}
