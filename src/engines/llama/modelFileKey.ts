import { statSync } from "node:fs";

/**
 * What identifies a model file's contents for caches of what is read from it: its path, size and
 * modification time; undefined when the file cannot be read (nothing is cached for it).
 */
export function modelFileKey(file: string): string | undefined {
  try {
    const stats = statSync(file);
    return `${file}\u0000${stats.size}\u0000${stats.mtimeMs}`;
  } catch {
    return undefined;
  }
}
