import { InvalidArgumentError, type Command } from "commander";
import { randomUUID } from "node:crypto";
import { toBalanceResponse } from "../billing/balanceReport.js";
import { Credits } from "../billing/credits.js";
import { microsToUnits, unitsToMicros } from "../billing/money.js";
import { loadServerConfig } from "../config/serverSettings.js";
import { getAccount, type Account } from "../store/accounts.js";
import { getApiKey } from "../store/apiKeys.js";
import type { Currency } from "../store/ledger.js";
import { databasePath, openStore, type Db } from "../store/Store.js";
import { addSettingOption, settingFlags, type SettingFlags } from "./options.js";
import { out } from "./ui.js";
import { registerUsageCommand } from "./usage.js";

/** A non-negative decimal amount of whole units, as micros (exact: no float drift). */
function parseMicros(value: string): number {
  const amount = Number(value);
  if (value.trim() === "" || !Number.isFinite(amount) || amount < 0) throw new InvalidArgumentError("expected a non-negative number, e.g. 2.5");
  return unitsToMicros(amount);
}

const units = (micros: number) => microsToUnits(micros).toFixed(6);

/** Opens the data directory's store and a Credits on it (the node's reset hour, the wall clock). */
function withCredits<T>(flags: SettingFlags, run: (db: Db, credits: Credits) => T): T {
  const config = loadServerConfig(settingFlags(flags));
  const db = openStore(databasePath(config.dataDir));
  try {
    return run(db, new Credits(db, { resetHourUtc: config.diemResetHourUtc, now: Date.now, bootId: `cli-${randomUUID()}` }));
  } finally {
    db.close();
  }
}

function accountOrFail(db: Db, id: string): Account {
  const account = getAccount(db, id);
  if (!account) throw new Error(`no account with id ${id} (hearth keys list shows the accounts of the keys)`);
  return account;
}

/** `hearth credits …` and `hearth usage …`: the money commands. */
export function registerCreditsCommands(program: Command): void {
  registerCreditsCommand(program);
  registerUsageCommand(program);
}

export function registerCreditsCommand(program: Command): void {
  const credits = program.command("credits").description("grant, stake and inspect prepaid credits (works on the data directory directly; the server need not run)");

  const grant = credits
    .command("grant")
    .description("add credit to an account, named by its id or by one of its keys; give exactly one of --key/--account and one of --usd/--diem/--bundled")
    .option("--key <id>", "an API key id (from keys list): its account receives the credit")
    .option("--account <id>", "the account id that receives the credit")
    .option("--usd <amount>", "USD to add (spent after DIEM and bundled credits)", parseMicros)
    .option("--diem <amount>", "DIEM to add; unused DIEM expires at the next epoch start, like the staking allocation", parseMicros)
    .option("--bundled <amount>", "bundled credits to add: USD-equivalent, spent before the USD balance", parseMicros)
    .option("--note <text>", "a note stored with the ledger row", "granted with hearth credits grant");
  addSettingOption(grant, "dataDir");
  addSettingOption(grant, "diemResetHourUtc");
  grant.action((flags: SettingFlags & { key?: string; account?: string; usd?: number; diem?: number; bundled?: number; note: string }) => {
    if ((flags.key === undefined) === (flags.account === undefined)) throw new Error("credits grant: give exactly one of --key and --account");
    const amounts = (
      [
        ["USD", flags.usd],
        ["DIEM", flags.diem],
        ["BUNDLED_CREDITS", flags.bundled],
      ] as [Currency, number | undefined][]
    ).filter(([, micros]) => micros !== undefined) as [Currency, number][];
    if (amounts.length !== 1) throw new Error("credits grant: give exactly one of --usd, --diem and --bundled");
    const [currency, micros] = amounts[0]!;
    if (micros <= 0) throw new Error("credits grant: the amount must be at least 0.000001");
    withCredits(flags, (db, credits) => {
      let accountId = flags.account;
      if (flags.key !== undefined) {
        const key = getApiKey(db, flags.key);
        if (!key) throw new Error(`no API key with id ${flags.key}`);
        accountId = key.accountId;
      }
      const account = accountOrFail(db, accountId!);
      credits.grant(account.id, currency, micros, flags.note, "grant", "cli");
      const balance = credits.snapshot(account.id);
      const now = currency === "USD" ? balance.usd : currency === "DIEM" ? balance.diem : balance.bundled;
      process.stdout.write(`Granted ${units(micros)} ${currency} to account ${account.id}; its ${currency} balance is now ${units(now)}\n`);
    });
  });

  const stake = credits
    .command("stake")
    .description("set the DIEM an account stakes: its DIEM balance refills to this amount at each epoch start (now included); 0 stops staking")
    .requiredOption("--account <id>", "the account id")
    .requiredOption("--diem <amount>", "DIEM staked, i.e. the DIEM allocation per epoch (1 DIEM buys 1 USD of inference per day)", parseMicros);
  addSettingOption(stake, "dataDir");
  addSettingOption(stake, "diemResetHourUtc");
  stake.action((flags: SettingFlags & { account: string; diem: number }) => {
    withCredits(flags, (db, credits) => {
      const account = accountOrFail(db, flags.account);
      credits.stake(account.id, flags.diem);
      const balance = credits.snapshot(account.id);
      process.stdout.write(`Account ${account.id} stakes ${units(flags.diem)} DIEM; its DIEM balance for this epoch is ${units(balance.diem)}\n`);
    });
  });

  const balance = credits
    .command("balance")
    .description("show an account's balances as GET /billing/balance reports them, with the detail behind them")
    .requiredOption("--account <id>", "the account id")
    .option("--json", "print JSON (the /billing/balance record plus a details object) instead of text");
  addSettingOption(balance, "dataDir");
  addSettingOption(balance, "diemResetHourUtc");
  balance.action((flags: SettingFlags & { account: string; json?: boolean }) => {
    withCredits(flags, (db, credits) => {
      const account = accountOrFail(db, flags.account);
      const snapshot = credits.snapshot(account.id);
      const record = toBalanceResponse(snapshot);
      if (flags.json) {
        const details = {
          usd: microsToUnits(snapshot.usd),
          bundledCredits: microsToUnits(snapshot.bundled),
          diem: microsToUnits(snapshot.diem),
          stakedDiem: microsToUnits(snapshot.stakedDiem),
          held: { usd: microsToUnits(snapshot.held.usd), bundledCredits: microsToUnits(snapshot.held.bundled), diem: microsToUnits(snapshot.held.diem) },
        };
        process.stdout.write(`${JSON.stringify({ accountId: account.id, ...record, details }, null, 2)}\n`);
        return;
      }
      const held = snapshot.held.usd + snapshot.held.bundled + snapshot.held.diem;
      const label = (text: string) => out.dim(text.padEnd(17));
      process.stdout.write(
        [
          `${label("Account")}${out.bold(account.id)} (${account.name})`,
          `${label("USD")}${out.green(units(snapshot.usd + snapshot.bundled))} (bundled credits ${units(snapshot.bundled)} included)`,
          `${label("DIEM")}${out.green(units(snapshot.diem))} (staked per epoch: ${units(snapshot.stakedDiem)})`,
          `${label("Held in flight")}${held > 0 ? `${units(snapshot.held.usd + snapshot.held.bundled)} USD, ${units(snapshot.held.diem)} DIEM` : "nothing"}`,
          `${label("Next charge from")}${record.consumptionCurrency ?? out.yellow("nothing: the account cannot pay for priced models")}`,
          "",
        ].join("\n"),
      );
    });
  });
}
