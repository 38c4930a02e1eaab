import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { MIGRATIONS } from "../../src/store/migrations.js";
import { migrate } from "../../src/store/Store.js";

describe("the operator migration", () => {
  it("makes the oldest admin key of an existing node its operator key, and no other", () => {
    const db = new Database(":memory:");
    db.exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)");
    // The node as it was before: every migration up to the operator one.
    for (const migration of MIGRATIONS.filter((m) => m.version < 500)) {
      db.exec(migration.sql);
      db.prepare("INSERT INTO schema_migrations VALUES (?, ?, ?)").run(migration.version, migration.name, 0);
    }
    db.prepare("INSERT INTO accounts (id, name, created_at) VALUES ('a', 'a', 0)").run();
    const key = db.prepare("INSERT INTO api_keys (id, account_id, description, key_type, secret_hash, last6, created_at) VALUES (?, 'a', ?, ?, ?, 'xxxxxx', ?)");
    key.run("inference", "first of all", "INFERENCE", "h1", 1);
    key.run("bootstrap", "made with the CLI", "ADMIN", "h2", 2);
    key.run("later", "made through the API", "ADMIN", "h3", 3);
    migrate(db);
    expect(db.prepare("SELECT id FROM api_keys WHERE operator = 1").pluck().all()).toEqual(["bootstrap"]);
    expect(
      db
        .prepare("PRAGMA table_info(ledger)")
        .all()
        .map((c: any) => c.name),
    ).toContain("granted_by");
  });
});
