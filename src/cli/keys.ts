import type { Command } from "commander";
import { loadServerConfig } from "../config/serverSettings.js";
import { createAccount, getAccount } from "../store/accounts.js";
import { createApiKey, hasAnyKey, listApiKeys, revokeApiKey } from "../store/apiKeys.js";
import { Credits } from "../billing/credits.js";
import { toMicros } from "../store/ledger.js";
import { databasePath, openStore } from "../store/Store.js";
import { inTransaction } from "../store/transaction.js";
import { addSettingOption, settingFlags, type SettingFlags } from "./options.js";
import { out } from "./ui.js";

function parseAmount(value: string): number {
  const amount = Number(value);
  if (!Number.isFinite(amount) || amount < 0) throw new Error(`not a valid amount: ${value}`);
  return amount;
}

function withStore<T>(flags: SettingFlags, run: (db: ReturnType<typeof openStore>, credits: Credits) => T): T {
  const config = loadServerConfig(settingFlags(flags));
  const db = openStore(databasePath(config.dataDir));
  try {
    // The CLI never reserves, so its boot id only has to differ from the server's.
    return run(db, new Credits(db, { resetHourUtc: config.diemResetHourUtc, now: Date.now, bootId: "cli" }));
  } finally {
    db.close();
  }
}

export function registerKeysCommand(program: Command): void {
  const keys = program.command("keys").description("manage API keys (works on the data directory directly; the server need not run)");

  const create = keys
    .command("create")
    .description("create an API key and print its secret (shown once) as the last line")
    .requiredOption("--name <name>", "a description of the key; also names the new account")
    .option("--admin", "an account admin key (manages its account's keys and usage) instead of an inference key; the node's first key, if an admin key, is the operator's")
    .option("--operator", "an operator key: an admin key that also grants credit to any account and manages the node (models, every account, metrics)")
    .option(
      "--gateway",
      "an inference key for a gateway that relays many callers to this node (docs/scaling.md): no per-key rate limits and never blocked for repeated failures, since the gateway applies its callers' own",
    )
    .option("--account <id>", "add the key to this existing account instead of creating one")
    .option("--usd <amount>", "grant this many USD of credit to the account", parseAmount)
    .option("--diem <amount>", "grant this many DIEM of credit to the account", parseAmount)
    .option("--expires <iso-date>", "the key stops working at this time");
  addSettingOption(create, "dataDir");
  addSettingOption(create, "diemResetHourUtc");
  create.action(
    (flags: SettingFlags & { name: string; admin?: boolean; operator?: boolean; gateway?: boolean; account?: string; usd?: number; diem?: number; expires?: string }) => {
      const expiresAt = flags.expires ? Date.parse(flags.expires) : null;
      if (expiresAt !== null && Number.isNaN(expiresAt)) throw new Error(`--expires: not a date: ${flags.expires}`);
      if (flags.gateway && (flags.admin || flags.operator)) throw new Error("--gateway makes an inference key: it cannot go with --admin or --operator");
      withStore(flags, (db, credits) => {
        const { secret, record } = inTransaction(db, () => {
          const account = flags.account ? getAccount(db, flags.account) : createAccount(db, flags.name);
          if (!account) throw new Error(`no account with id ${flags.account}`);
          if (flags.usd) credits.grant(account.id, "USD", toMicros(flags.usd), `granted with key ${flags.name}`, "grant", "cli");
          if (flags.diem) credits.grant(account.id, "DIEM", toMicros(flags.diem), `granted with key ${flags.name}`, "grant", "cli");
          const admin = flags.admin === true || flags.operator === true;
          // The first key of a fresh node, made by whoever runs the node, is the operator's.
          const operator = flags.operator === true || (admin && !hasAnyKey(db));
          return createApiKey(db, { accountId: account.id, description: flags.name, keyType: admin ? "ADMIN" : "INFERENCE", operator, gateway: flags.gateway === true, expiresAt });
        });
        const kind = record.operator ? "operator" : record.keyType === "ADMIN" ? "account admin" : record.gateway ? "gateway" : "inference";
        process.stdout.write(`Created ${kind} key ${record.id} for account ${record.accountId}. The secret is shown only once:\n${out.bold(out.green(secret))}\n`);
      });
    },
  );

  const list = keys.command("list").description("list API keys (secrets are never shown)").option("--json", "print JSON instead of a table");
  addSettingOption(list, "dataDir");
  list.action((flags: SettingFlags & { json?: boolean }) => {
    withStore(flags, (db) => {
      const rows = listApiKeys(db);
      if (flags.json) {
        process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
        return;
      }
      const iso = (t: number | null) => (t ? new Date(t).toISOString() : "-");
      const table = rows.map((k) => [
        k.id,
        k.operator ? "OPERATOR" : k.gateway ? "GATEWAY" : k.keyType,
        k.description,
        `...${k.last6}`,
        k.accountId,
        iso(k.createdAt),
        iso(k.lastUsedAt),
        k.revokedAt ? `revoked ${iso(k.revokedAt)}` : "active",
      ]);
      printTable(["ID", "TYPE", "NAME", "KEY", "ACCOUNT", "CREATED", "LAST USED", "STATE"], table, { STATE: (state) => (state === "active" ? out.green : out.dim)(state) });
    });
  });

  const revoke = keys.command("revoke").description("revoke a key; it stops working on its next request").argument("<id>", "the key id (from keys list)");
  addSettingOption(revoke, "dataDir");
  revoke.action((id: string, flags: SettingFlags) => {
    withStore(flags, (db) => {
      if (!revokeApiKey(db, id)) {
        process.stderr.write(`hearth: no active key with id ${id}\n`);
        process.exitCode = 1;
        return;
      }
      process.stdout.write(`Revoked ${id}\n`);
    });
  });
}

/**
 * A plain-text table on stdout: a bold header in a terminal; `paint` colours a column's cells
 * (after padding, so colour codes never skew the alignment).
 */
export function printTable(header: string[], rows: string[][], paint: Record<string, (cell: string) => string> = {}): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const pad = (cell: string, i: number) => (i === header.length - 1 ? cell : cell.padEnd(widths[i]!));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => {
        const padded = pad(c, i);
        const colour = paint[header[i]!];
        return colour ? colour(c) + padded.slice(c.length) : padded;
      })
      .join("  ")
      .trimEnd();
  const head = out.bold(header.map(pad).join("  ").trimEnd());
  process.stdout.write(`${[head, ...rows.map(line)].join("\n")}\n`);
}
