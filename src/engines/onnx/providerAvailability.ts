import { existsSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import * as ort from "onnxruntime-node";
import { GraphBuilder } from "./graphBuilder.js";

/**
 * Whether an onnxruntime execution provider works on this machine. `installed` tells a provider
 * that is present but fails (its library loads but finds no GPU, or misses CUDA or cuDNN) from
 * one that was never installed: the first deserves a warning, the second is a CPU-only machine.
 */
export type ProviderAvailability = { available: true } | { available: false; installed: boolean; reason: string };

/** The command that fetches the CUDA provider (package.json), named in every "not installed" reason. */
export const INSTALL_CUDA_HINT = "run `npm run onnx:cuda`, or copy the files in as docs/operations.md#onnx-models-on-the-gpu describes";

/**
 * onnxruntime-node's native folder (bin/napi-v6/linux/x64): the binding, and the provider
 * libraries it loads from next to itself when a session asks for them. Its install script puts
 * the CUDA provider there; Hearth's offline install skips that script.
 */
export function onnxRuntimeBinaryDir(): string | undefined {
  const packageDir = dirname(dirname(createRequire(import.meta.url).resolve("onnxruntime-node")));
  const bin = join(packageDir, "bin");
  if (!existsSync(bin)) return undefined;
  const napiVersion = (name: string) => Number(name.slice("napi-v".length));
  const napiVersions = readdirSync(bin)
    .filter((name) => /^napi-v\d+$/.test(name))
    .sort((a, b) => napiVersion(b) - napiVersion(a));
  return napiVersions.map((napi) => join(bin, napi, process.platform, process.arch)).find((dir) => existsSync(join(dir, "onnxruntime_binding.node")));
}

/** A provider library's file name on this platform: libonnxruntime_providers_cuda.so, onnxruntime_providers_cuda.dll... */
export function providerLibraryFileName(name: string, platform: NodeJS.Platform = process.platform): string {
  if (platform === "win32") return `onnxruntime_providers_${name}.dll`;
  return `libonnxruntime_providers_${name}${platform === "darwin" ? ".dylib" : ".so"}`;
}

/**
 * The files a provider that is not bundled with onnxruntime-node (CUDA, TensorRT) needs in
 * `dir` and that are not there: its own library and the shared bridge every such provider loads
 * through (libonnxruntime_providers_shared.so).
 */
export function missingProviderLibraries(name: string, dir: string, platform: NodeJS.Platform = process.platform): string[] {
  return [providerLibraryFileName(name, platform), providerLibraryFileName("shared", platform)].filter((file) => !existsSync(join(dir, file)));
}

/** `y = x + 1` on one float: the smallest graph that makes a provider load, compile and compute. */
function probeModel(): Uint8Array {
  const graph = new GraphBuilder("execution-provider-probe");
  const x = graph.input("x", "float32", [1]);
  graph.output(graph.op("Add", [x, graph.floatConstant([1])]), "y", "float32", [1]);
  return graph.toModelBytes();
}

/** Opens a session on `provider` alone and runs the probe graph through it; throws what onnxruntime throws. */
async function runProbeSession(provider: string): Promise<void> {
  const session = await ort.InferenceSession.create(probeModel(), { executionProviders: [provider], graphOptimizationLevel: "disabled" });
  try {
    const { y } = await session.run({ x: new ort.Tensor("float32", Float32Array.of(1), [1]) });
    const value = (y?.data as Float32Array | undefined)?.[0];
    if (value !== 2) throw new Error(`the probe graph computed ${value} for 1 + 1`);
  } finally {
    await session.release();
  }
}

/** How the docs and onnxruntime spell a provider's name in prose. */
const DISPLAY_NAMES: Readonly<Record<string, string>> = { cuda: "CUDA", tensorrt: "TensorRT", webgpu: "WebGPU", dml: "DirectML", coreml: "CoreML" };
const displayName = (provider: string) => DISPLAY_NAMES[provider] ?? provider;

const firstLine = (error: unknown) =>
  String((error as Error)?.message ?? error)
    .trim()
    .split("\n")[0]!
    .slice(0, 300);

async function detect(provider: string): Promise<ProviderAvailability> {
  if (provider === "cpu") return { available: true };
  const offered = ort.listSupportedBackends();
  const backend = offered.find((b) => b.name === provider);
  if (!backend) {
    return { available: false, installed: false, reason: `this onnxruntime-node build offers no "${provider}" provider (it offers ${offered.map((b) => b.name).join(", ")})` };
  }
  if (!backend.bundled) {
    // Checked before onnxruntime tries: a missing library is the normal state of a CPU
    // install, and onnxruntime would print a red error to stderr on every attempt.
    const dir = onnxRuntimeBinaryDir();
    const missing = dir ? missingProviderLibraries(provider, dir) : [providerLibraryFileName(provider)];
    if (missing.length > 0) {
      const hint = provider === "cuda" ? `; ${INSTALL_CUDA_HINT}` : "";
      return {
        available: false,
        installed: false,
        reason: `the ${displayName(provider)} provider library is not installed (${missing.join(", ")} missing from ${dir ?? "onnxruntime-node's bin folder"}${hint})`,
      };
    }
  }
  try {
    await runProbeSession(provider);
    return { available: true };
  } catch (error) {
    const needs = provider === "cuda" ? " (it needs an NVIDIA GPU with its driver, and the CUDA 12 and cuDNN 9 libraries on the library path)" : "";
    return { available: false, installed: true, reason: `the ${displayName(provider)} provider is installed but a session on it failed${needs}: ${firstLine(error)}` };
  }
}

const detected = new Map<string, Promise<ProviderAvailability>>();

/**
 * Whether `provider` works here: one the build does not bundle (CUDA, TensorRT) must have its
 * library files next to the binding, then a session on it alone must open and compute 1 + 1.
 * Decided once per process and provider: installing a provider means restarting Hearth anyway,
 * and a failing probe is not paid again at every load.
 */
export function providerAvailability(provider: string): Promise<ProviderAvailability> {
  let availability = detected.get(provider);
  if (!availability) {
    // Detection never fails a load by itself: whatever goes wrong makes the provider unavailable, with the cause.
    availability = detect(provider).catch(
      (error: unknown): ProviderAvailability => ({ available: false, installed: false, reason: `could not check the ${displayName(provider)} provider: ${firstLine(error)}` }),
    );
    detected.set(provider, availability);
  }
  return availability;
}
