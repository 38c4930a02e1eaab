import { statSync } from "node:fs";
import type { ModelFileStamp } from "../store/modelFileFeatures.js";

/**
 * A model file's identity for the store's caches (what its header says, its memory figure): its
 * path, size and modification time; undefined when it cannot be read (a probe or load then says why).
 */
export function fileStamp(path: string, backend: string): ModelFileStamp | undefined {
  try {
    const stats = statSync(path);
    return { path, backend, size: stats.size, mtimeMs: stats.mtimeMs };
  } catch {
    return undefined;
  }
}
