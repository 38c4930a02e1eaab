import { existsSync, statSync } from "node:fs";
import { join } from "node:path";

/** Where the safety checker of a model lives, if it has one. */
export function resolveSafetyChecker(dir: string, configured: string | undefined): string | null {
  const candidate = configured ?? join(dir, "safety_checker");
  if (!existsSync(candidate)) {
    if (configured) throw new Error(`image.safetyChecker: ${configured} does not exist`);
    return null;
  }
  return statSync(candidate).isDirectory() ? (existsSync(join(candidate, "model.onnx")) ? join(candidate, "model.onnx") : null) : candidate;
}
