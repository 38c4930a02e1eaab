import { getAccount, getAccountWithKeyCounts, listAccountsWithKeyCounts, type AccountWithKeyCounts } from "../../store/accounts.js";
import type { Credits } from "../../billing/credits.js";
import { microsToUnits, unitsToMicros } from "../../billing/money.js";
import { NotFoundError } from "../../errors.js";
import { dailySpendByModel } from "../../store/ledger.js";
import type { Db } from "../../store/Store.js";
import { dailyRequestsByModel } from "../../store/usage.js";
import type { AdminAccount, AdminAccountsResponse, AdminUsageResponse, GrantCreditsRequest } from "./schema.js";
import { DAY_MS } from "../../time.js";

const NO_MODEL = "(none)";

/** Node-wide account and usage views for admins (the per-account views are the billing endpoints). */
export class ConsoleService {
  constructor(private readonly deps: { db: Db; credits: Credits; now: () => number }) {}

  accounts(limit: number): AdminAccountsResponse {
    const rows = listAccountsWithKeyCounts(this.deps.db, this.deps.now(), limit);
    return { object: "list", data: rows.map((row) => this.toAccount(row)) };
  }

  account(id: string): AdminAccount {
    const row = getAccountWithKeyCounts(this.deps.db, this.deps.now(), id);
    if (!row) throw new NotFoundError(`No account with id ${id}`);
    return this.toAccount(row);
  }

  grant(id: string, body: GrantCreditsRequest, grantedBy: string): AdminAccount {
    if (!getAccount(this.deps.db, id)) throw new NotFoundError(`No account with id ${id}`);
    const micros = unitsToMicros(body.amount);
    this.deps.credits.grant(id, body.currency, micros, body.note?.trim() || `granted by key ${grantedBy}`, "grant", grantedBy);
    return this.account(id);
  }

  /** Requests (usage rows) and spend (ledger charges less refunds) per UTC day and model. */
  usage(days: number): AdminUsageResponse {
    const today = Math.floor(this.deps.now() / DAY_MS) * DAY_MS;
    const since = today - (days - 1) * DAY_MS;
    const dayList = Array.from({ length: days }, (_, i) => new Date(since + i * DAY_MS).toISOString().slice(0, 10));
    const requests = dailyRequestsByModel(this.deps.db, since, NO_MODEL);
    const spend = dailySpendByModel(this.deps.db, since, NO_MODEL);
    const rows = new Map<string, AdminUsageResponse["data"][number]>();
    const rowFor = (day: number, model: string) => {
      const date = new Date(day).toISOString().slice(0, 10);
      const key = `${date}\u0000${model}`;
      let row = rows.get(key);
      if (!row) rows.set(key, (row = { date, model, requests: 0, tokens: 0, spendUsd: 0, spendDiem: 0 }));
      return row;
    };
    for (const r of requests) Object.assign(rowFor(r.day, r.model), { requests: r.requests, tokens: r.tokens ?? 0 });
    for (const s of spend) Object.assign(rowFor(s.day, s.model), { spendUsd: microsToUnits(s.usd), spendDiem: microsToUnits(s.diem) });
    const data = [...rows.values()].sort((a, b) => a.date.localeCompare(b.date) || a.model.localeCompare(b.model));
    return { days: dayList, models: [...new Set(data.map((row) => row.model))].sort(), data };
  }

  private toAccount(row: AccountWithKeyCounts): AdminAccount {
    // snapshot() refills DIEM for the current epoch first, so the balance shown is the one a request would see.
    const balance = this.deps.credits.snapshot(row.id);
    return {
      id: row.id,
      name: row.name,
      kind: row.kind,
      createdAt: new Date(row.createdAt).toISOString(),
      balances: { USD: microsToUnits(balance.usd), DIEM: microsToUnits(balance.diem), BUNDLED_CREDITS: microsToUnits(balance.bundled) },
      stakedDiem: microsToUnits(balance.stakedDiem),
      keys: { active: row.activeKeys, total: row.totalKeys },
    };
  }
}
