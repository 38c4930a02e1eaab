import { randomUUID } from "node:crypto";
import type { Db } from "./Store.js";

export interface Account {
  id: string;
  name: string;
  kind: "user" | "wallet";
  createdAt: number;
}

export function createAccount(db: Db, name: string, kind: Account["kind"] = "user", now = Date.now()): Account {
  const account: Account = { id: randomUUID(), name, kind, createdAt: now };
  db.prepare("INSERT INTO accounts (id, name, kind, created_at) VALUES (?, ?, ?, ?)").run(account.id, name, kind, now);
  return account;
}

export function getAccount(db: Db, id: string): Account | undefined {
  const row = db.prepare("SELECT id, name, kind, created_at AS createdAt FROM accounts WHERE id = ?").get(id) as Account | undefined;
  return row;
}
