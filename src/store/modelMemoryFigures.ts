import type { ModelFileStamp } from "./modelFileFeatures.js";
import { statement, type Db } from "./Store.js";

/** A model's memory once loaded, as the store keeps it. */
export interface StoredMemoryFigure {
  ramBytes: number;
  vramBytes: number;
}

/**
 * The memory figure kept for this exact file and these settings (`settingsKey`: what the figure
 * depends on besides the file, the backend's `memoryKey`), or undefined (never figured, or the
 * file changed since).
 */
export function cachedModelMemoryFigure(db: Db, stamp: ModelFileStamp, settingsKey: string): StoredMemoryFigure | undefined {
  const row = statement(
    db,
    "SELECT ram_bytes AS ramBytes, vram_bytes AS vramBytes FROM model_memory_figures WHERE path = ? AND backend = ? AND settings = ? AND size = ? AND mtime_ms = ?",
  ).get(stamp.path, stamp.backend, settingsKey, stamp.size, Math.floor(stamp.mtimeMs)) as StoredMemoryFigure | undefined;
  return row ? { ramBytes: row.ramBytes, vramBytes: row.vramBytes } : undefined;
}

export function storeModelMemoryFigure(db: Db, stamp: ModelFileStamp, settingsKey: string, figure: StoredMemoryFigure, now: number): void {
  statement(
    db,
    `INSERT INTO model_memory_figures (path, backend, settings, size, mtime_ms, ram_bytes, vram_bytes, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (path, backend, settings) DO UPDATE SET size = excluded.size, mtime_ms = excluded.mtime_ms,
       ram_bytes = excluded.ram_bytes, vram_bytes = excluded.vram_bytes, updated_at = excluded.updated_at`,
  ).run(stamp.path, stamp.backend, settingsKey, stamp.size, Math.floor(stamp.mtimeMs), Math.round(figure.ramBytes), Math.round(figure.vramBytes), now);
}
