import { createAccount } from "./accounts.js";
import { statement, type Db } from "./Store.js";

export type WalletFamily = "evm" | "solana";

export interface WalletRecord {
  address: string;
  accountId: string;
  family: WalletFamily;
  createdAt: number;
}

/** The ledger account of a wallet (by normalised address), if it has one. */
export function findWallet(db: Db, address: string): WalletRecord | undefined {
  return statement(db, "SELECT address, account_id AS accountId, family, created_at AS createdAt FROM wallets WHERE address = ?").get(address) as WalletRecord | undefined;
}

/** The wallet's account, created (kind 'wallet', named after the address) on first use. */
export function ensureWalletAccount(db: Db, address: string, family: WalletFamily, now = Date.now()): string {
  return db
    .transaction(() => {
      const existing = findWallet(db, address);
      if (existing) return existing.accountId;
      const account = createAccount(db, address, "wallet", now);
      statement(db, "INSERT INTO wallets (address, account_id, family, created_at) VALUES (?, ?, ?, ?)").run(address, account.id, family, now);
      return account.id;
    })
    .immediate();
}
