import Database from "better-sqlite3";
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { MIGRATIONS } from "./migrations.js";

export type Db = Database.Database;

/** Prepared statements per database, by SQL text: preparing one is SQLite's parse and plan, every call. */
const statements = new WeakMap<Db, Map<string, Database.Statement>>();
/** The dynamic SQL texts (optional filters, updated columns) are a bounded set; a bound keeps a mistake from growing it. */
const MAX_CACHED_STATEMENTS = 512;

/**
 * The prepared statement for `sql` on `db`, prepared once and kept. A request's own store calls
 * (its key, balances, holds, usage row) prepared about ten statements each, about 0.8 ms of the
 * event loop per request on the 2-core machine, a pause every stream on the node shares; the job
 * queue's poll prepared its query every second. The statement comes back in its default mode (a
 * caller's `.pluck()` is undone), and one still iterating (`.iterate()` not finished) is not
 * handed out again: that caller gets a fresh statement.
 */
export function statement(db: Db, sql: string): Database.Statement {
  let cache = statements.get(db);
  if (!cache) {
    cache = new Map();
    statements.set(db, cache);
  }
  const cached = cache.get(sql);
  if (cached && !cached.busy) return cached.reader ? cached.pluck(false) : cached;
  const prepared = db.prepare(sql);
  if (!cached) {
    if (cache.size >= MAX_CACHED_STATEMENTS) cache.clear();
    cache.set(sql, prepared);
  }
  return prepared;
}

/** The database file inside a data directory. */
export const databasePath = (dataDir: string) => join(dataDir, "hearth.db");

/** Opens (creating if needed) the SQLite database in WAL mode and applies pending migrations. */
export function openStore(path: string): Db {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.pragma("foreign_keys = ON");
  db.pragma("busy_timeout = 5000");
  migrate(db);
  return db;
}

export function migrate(db: Db): void {
  db.exec("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)");
  const applied = new Set(db.prepare("SELECT version FROM schema_migrations").pluck().all() as number[]);
  for (const migration of MIGRATIONS) {
    if (applied.has(migration.version)) continue;
    db.transaction(() => {
      db.exec(migration.sql);
      db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)").run(migration.version, migration.name, Date.now());
    })();
  }
}
