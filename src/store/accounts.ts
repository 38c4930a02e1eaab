import { randomUUID } from "node:crypto";
import { statement, type Db } from "./Store.js";

export interface Account {
  id: string;
  name: string;
  kind: "user" | "wallet";
  createdAt: number;
}

export function createAccount(db: Db, name: string, kind: Account["kind"] = "user", now = Date.now()): Account {
  const account: Account = { id: randomUUID(), name, kind, createdAt: now };
  statement(db, "INSERT INTO accounts (id, name, kind, created_at) VALUES (?, ?, ?, ?)").run(account.id, name, kind, now);
  return account;
}

export function getAccount(db: Db, id: string): Account | undefined {
  const row = statement(db, "SELECT id, name, kind, created_at AS createdAt FROM accounts WHERE id = ?").get(id) as Account | undefined;
  return row;
}

/** An account's DIEM stake: the daily allocation, and the epoch it was last refilled for (null: not yet). */
export interface DiemStake {
  stakedMicros: number;
  epoch: number | null;
}

export function getDiemStake(db: Db, accountId: string): DiemStake | undefined {
  return statement(db, "SELECT staked_diem_micros AS stakedMicros, diem_epoch AS epoch FROM accounts WHERE id = ?").get(accountId) as DiemStake | undefined;
}

/** Sets the stake and forgets the refilled epoch, so the next touch allocates afresh. */
export function setStakedDiem(db: Db, accountId: string, micros: number): void {
  statement(db, "UPDATE accounts SET staked_diem_micros = ?, diem_epoch = NULL WHERE id = ?").run(micros, accountId);
}

export function setDiemEpoch(db: Db, accountId: string, epoch: number): void {
  statement(db, "UPDATE accounts SET diem_epoch = ? WHERE id = ?").run(epoch, accountId);
}

/** An account with the number of its keys (active: not revoked and not expired at `now`). */
export interface AccountWithKeyCounts extends Account {
  activeKeys: number;
  totalKeys: number;
}

const WITH_KEY_COUNTS = `SELECT a.id, a.name, a.kind, a.created_at AS createdAt,
    (SELECT COUNT(*) FROM api_keys k WHERE k.account_id = a.id AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > @now)) AS activeKeys,
    (SELECT COUNT(*) FROM api_keys k WHERE k.account_id = a.id) AS totalKeys
  FROM accounts a`;

/** The newest accounts first. */
export function listAccountsWithKeyCounts(db: Db, now: number, limit: number): AccountWithKeyCounts[] {
  return statement(db, `${WITH_KEY_COUNTS} ORDER BY a.created_at DESC LIMIT @limit`).all({ now, limit }) as AccountWithKeyCounts[];
}

export function getAccountWithKeyCounts(db: Db, now: number, id: string): AccountWithKeyCounts | undefined {
  return statement(db, `${WITH_KEY_COUNTS} WHERE a.id = @id`).get({ now, id }) as AccountWithKeyCounts | undefined;
}
