import { ImageSettings, VideoSettings } from "../../config/backendSettings.js";
import type { ModelEntry } from "../../config/modelRegistry.js";
import { alwaysServable, importEngineModules, needsFile, type BackendDescriptor, type SharedEngineLoader } from "../BackendDescriptor.js";
import { prepareImageCodec } from "../../media/image.js";
import type { DiffusionPool } from "../diffusion/OnnxDiffusionEngine.js";
import { estimateOnnxMemory } from "../onnx/estimateOnnxMemory.js";

/**
 * The settings that shape a diffusion worker pool: image and video entries on the same
 * directory with equal values share one loaded pool (the model lifecycle keys shared loads by this).
 */
export function diffusionPoolKey(entry: ModelEntry): string {
  const { workers, threads, executionProviders, scheduler, safetyChecker } = entry.image;
  return JSON.stringify(["onnx-diffusion", entry.file, workers, threads, executionProviders, scheduler, safetyChecker ?? null, entry.queue.maxWaiting]);
}

const engines = () => import("../diffusion/OnnxDiffusionEngine.js");

/** The pool, with the engine module it was started from (the views are built over it synchronously). */
interface LoadedPool {
  pool: DiffusionPool;
  engines: Awaited<ReturnType<typeof engines>>;
}

const sharedPool: SharedEngineLoader<LoadedPool> = {
  key: diffusionPoolKey,
  load: async (entry, options) => {
    const module = await engines();
    return { pool: await module.startDiffusionPool(entry, options.gpu), engines: module };
  },
  view: ({ pool, engines }, entry) => (entry.type === "video" ? engines.OnnxVideoEngine.over(pool) : engines.OnnxImageEngine.over(pool)),
  dispose: ({ pool }) => pool.pool.dispose(),
};

/**
 * The Stable Diffusion ONNX pipeline (diffusers' ONNX export): image models, inpainting models
 * (the edit routes' models; an inpainting export's UNet has 9 input channels), and video models built on its frames.
 */
export const onnxDiffusionBackend: BackendDescriptor = {
  serves: ["image", "inpaint", "video"],
  // Pictures and video frames are encoded (and edits' inputs decoded) with sharp.
  prepare: importEngineModules(() => [prepareImageCodec()]),
  settings: { image: ImageSettings, video: VideoSettings },
  entryProblems: needsFile('a onnx-diffusion model needs its model directory in "file"'),
  servable: alwaysServable,
  async load(entry, options) {
    const { OnnxImageEngine, OnnxVideoEngine } = await engines();
    return entry.type === "video" ? OnnxVideoEngine.load(entry, options.gpu) : OnnxImageEngine.load(entry, options.gpu);
  },
  shared: sharedPool,
  // Each diffusion worker loads its own sessions.
  estimateMemory: (entry, gpu) => estimateOnnxMemory(entry.file!, { copies: entry.image.workers, executionProviders: entry.image.executionProviders, gpu }),
};
