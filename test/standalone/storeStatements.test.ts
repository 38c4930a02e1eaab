import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openStore, statement } from "../../src/store/Store.js";

const dir = mkdtempSync(join(tmpdir(), "hearth-statements-"));
const db = openStore(join(dir, "hearth.db"));
afterAll(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});
db.exec("CREATE TABLE numbers (n INTEGER)");
for (let n = 1; n <= 5; n++) db.prepare("INSERT INTO numbers (n) VALUES (?)").run(n);

describe("store: prepared statements are kept per database", () => {
  it("prepares a statement once and hands the same one out again", () => {
    const first = statement(db, "SELECT n FROM numbers WHERE n = ?");
    expect(statement(db, "SELECT n FROM numbers WHERE n = ?")).toBe(first);
    expect(statement(db, "SELECT n FROM numbers WHERE n > ?")).not.toBe(first);
  });

  it("hands a statement out in its default mode, whatever the last caller set", () => {
    const sql = "SELECT n FROM numbers WHERE n = ?";
    expect(statement(db, sql).pluck().get(3)).toBe(3);
    expect(statement(db, sql).get(3)).toEqual({ n: 3 });
  });

  it("gives a fresh statement while the kept one is still iterating", () => {
    const sql = "SELECT n FROM numbers ORDER BY n";
    const outer = statement(db, sql);
    const seen: number[][] = [];
    for (const row of outer.iterate() as IterableIterator<{ n: number }>) {
      const inner = statement(db, sql);
      expect(inner).not.toBe(outer);
      seen.push([row.n, (inner.all() as { n: number }[]).length]);
    }
    expect(seen).toEqual([
      [1, 5],
      [2, 5],
      [3, 5],
      [4, 5],
      [5, 5],
    ]);
    // Done iterating: the kept one is handed out again.
    expect(statement(db, sql)).toBe(outer);
  });

  it("keeps statements apart per database", () => {
    const other = openStore(join(dir, "other.db"));
    try {
      expect(statement(other, "SELECT 1")).not.toBe(statement(db, "SELECT 1"));
    } finally {
      other.close();
    }
  });
});
