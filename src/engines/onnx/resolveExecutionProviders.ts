import type { ExecutionProviders } from "../../config/backendSettings.js";
import { providerAvailability, type ProviderAvailability } from "./providerAvailability.js";

/** Where an ONNX model's sessions run, and why (the load's log line and GET /admin/models say it). */
export interface ExecutionProviderChoice {
  /** The provider the model runs on: onnxruntime puts every node it can there (the rest run on the CPU). */
  name: string;
  /** What the sessions are given, in order of preference. */
  providers: string[];
  reason: string;
  /**
   * The model runs somewhere other than asked: a listed provider was skipped, or "auto" found
   * the CUDA provider installed but not working. Logged as a warning.
   */
  fellBack: boolean;
}

export interface ResolveExecutionProvidersOptions {
  /** The server's GPU switch: false makes "auto" pick the CPU (an explicit list is still honoured). */
  gpu: "auto" | false;
  /** Whether a provider works here; default: its library is installed and a test session runs on it (once per process). */
  availability?: (provider: string) => Promise<ProviderAvailability>;
}

/**
 * The execution providers an ONNX model's sessions get from its setting. "auto" is CUDA (then
 * the CPU for what CUDA cannot run) when the CUDA provider works here, else the CPU. A list is
 * kept in order without the providers that do not work here, each skip said in the reason;
 * when none is left the load fails with every provider's reason, rather than onnxruntime's
 * "Failed to load shared library" (which it also throws for ["cuda", "cpu"]: it never skips a
 * provider by itself).
 */
export async function resolveExecutionProviders(setting: ExecutionProviders, options: ResolveExecutionProvidersOptions): Promise<ExecutionProviderChoice> {
  const availability = options.availability ?? providerAvailability;
  if (setting === "auto") {
    if (options.gpu === false) return { name: "cpu", providers: ["cpu"], reason: "auto: the server runs without a GPU", fellBack: false };
    const cuda = await availability("cuda");
    if (cuda.available) return { name: "cuda", providers: ["cuda", "cpu"], reason: "auto: the CUDA provider is installed and a test session ran on it", fellBack: false };
    return { name: "cpu", providers: ["cpu"], reason: `auto: ${cuda.reason}`, fellBack: cuda.installed };
  }
  const kept: string[] = [];
  const unavailable: string[] = [];
  for (const provider of new Set(setting)) {
    const check = await availability(provider);
    if (check.available) kept.push(provider);
    else unavailable.push(`${provider}: ${check.reason}`);
  }
  const asked = JSON.stringify(setting);
  if (kept.length === 0) {
    throw new Error(`none of the execution providers ${asked} works here (${unavailable.join("; ")}); add "cpu" to the list to fall back to the CPU, or set "auto"`);
  }
  return {
    name: kept[0]!,
    providers: kept,
    reason: unavailable.length > 0 ? `configured ${asked}, skipped ${unavailable.join("; ")}` : `configured ${asked}`,
    fellBack: kept[0] !== setting[0],
  };
}
