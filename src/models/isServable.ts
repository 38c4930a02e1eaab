import type { ModelEntry } from "../config/modelRegistry.js";

/**
 * Whether a configured model can run at all (an upstream needs its base URL). Models that
 * cannot are left out of every listing. Kept free of engine imports so the CLI stays quick.
 */
export function isServable(entry: ModelEntry): { servable: true } | { servable: false; reason: string } {
  if (entry.backend === "upstream" && !entry.upstream?.baseUrl) {
    const variable = entry.upstream?.baseUrlEnv;
    return { servable: false, reason: variable ? `${variable} is not set` : "no upstream.baseUrl" };
  }
  return { servable: true };
}
