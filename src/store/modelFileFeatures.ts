import { statement, type Db } from "./Store.js";

/** A model file as it is on disk: a cached answer holds while its size and modification time do. */
export interface ModelFileStamp {
  path: string;
  backend: string;
  size: number;
  mtimeMs: number;
}

/** The features cached for this exact file, or undefined (never probed, or the file changed since). */
export function cachedModelFileFeatures<T>(db: Db, stamp: ModelFileStamp): T | undefined {
  const row = statement(db, "SELECT features FROM model_file_features WHERE path = ? AND backend = ? AND size = ? AND mtime_ms = ?").get(
    stamp.path,
    stamp.backend,
    stamp.size,
    Math.floor(stamp.mtimeMs),
  ) as { features: string } | undefined;
  return row ? (JSON.parse(row.features) as T) : undefined;
}

export function storeModelFileFeatures(db: Db, stamp: ModelFileStamp, features: unknown, now: number): void {
  statement(
    db,
    `INSERT INTO model_file_features (path, backend, size, mtime_ms, features, updated_at) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (path, backend) DO UPDATE SET size = excluded.size, mtime_ms = excluded.mtime_ms, features = excluded.features, updated_at = excluded.updated_at`,
  ).run(stamp.path, stamp.backend, stamp.size, Math.floor(stamp.mtimeMs), JSON.stringify(features), now);
}

/** Every cached answer, by file and backend. */
export function listModelFileFeatures(db: Db): (ModelFileStamp & { features: unknown })[] {
  const rows = statement(db, "SELECT path, backend, size, mtime_ms AS mtimeMs, features FROM model_file_features ORDER BY path, backend").all() as (ModelFileStamp & {
    features: string;
  })[];
  return rows.map((row) => ({ ...row, features: JSON.parse(row.features) as unknown }));
}
