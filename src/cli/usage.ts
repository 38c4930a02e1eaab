import { InvalidArgumentError, type Command } from "commander";
import { parseIsoInstant } from "../billing/parseIsoInstant.js";
import { toUsageEntry, usageCsvHeader, usageCsvRow } from "../billing/usageReport.js";
import { loadServerConfig } from "../config/serverSettings.js";
import { getAccount } from "../store/accounts.js";
import { databasePath, openStore } from "../store/Store.js";
import { countUsageEntries, iterateUsageEntries } from "../store/usageEntries.js";
import { addSettingOption, settingFlags, type SettingFlags } from "./options.js";
import { progressBar } from "./ui.js";

function parseInstant(value: string): number {
  const parsed = parseIsoInstant(value);
  if (!parsed) throw new InvalidArgumentError("expected an ISO 8601 date (2026-07-01) or date-time with a zone (2026-07-01T12:00:00Z)");
  return parsed.ms;
}

/** Rows are written in batches: an export of any size streams instead of building one string. */
const BATCH = 500;

export function registerUsageCommand(program: Command): void {
  const usage = program.command("usage").description("billing usage of the ledger (works on the data directory directly; the server need not run)");
  const exportCommand = usage
    .command("export")
    .description(
      "write the ledger's charge entries as CSV to stdout, oldest first, with the same columns as GET /billing/usage-history " +
        "with Accept: text/csv (e.g. hearth usage export --since 2026-07-01 > usage.csv)",
    )
    .option("--since <iso>", "only entries at or after this time (a date means 00:00 UTC)", parseInstant)
    .option("--until <iso>", "only entries before this time, exclusive (a date means 00:00 UTC)", parseInstant)
    .option("--account <id>", "only this account's entries (default: every account)");
  addSettingOption(exportCommand, "dataDir");
  exportCommand.action((flags: SettingFlags & { since?: number; until?: number; account?: string }) => {
    if (flags.since !== undefined && flags.until !== undefined && flags.until <= flags.since) throw new Error("--until must be later than --since");
    const db = openStore(databasePath(loadServerConfig(settingFlags(flags)).dataDir));
    try {
      if (flags.account && !getAccount(db, flags.account)) throw new Error(`no account with id ${flags.account}`);
      const filter = { accountId: flags.account, since: flags.since, until: flags.until };
      // The bar is drawn on stderr (and only in a terminal): stdout is the CSV.
      const progress = progressBar("Exporting usage");
      // Counting is for the bar only, drawn in a terminal: a piped export skips it.
      const total = process.stderr.isTTY ? countUsageEntries(db, filter) : 0;
      let chunk = usageCsvHeader();
      let rows = 0;
      for (const row of iterateUsageEntries(db, filter)) {
        chunk += usageCsvRow(toUsageEntry(row));
        if (++rows % BATCH === 0) {
          process.stdout.write(chunk);
          chunk = "";
          progress.update(rows, total);
        }
      }
      process.stdout.write(chunk);
      progress.update(rows, Math.max(total, rows));
      progress.stop();
    } finally {
      db.close();
    }
  });
}
