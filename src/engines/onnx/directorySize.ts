import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";

/** Bytes of every file under a directory (or of one file). */
export async function directorySize(path: string): Promise<number> {
  const info = await stat(path);
  if (!info.isDirectory()) return info.size;
  let total = 0;
  for (const item of await readdir(path, { withFileTypes: true })) total += await directorySize(join(path, item.name));
  return total;
}
