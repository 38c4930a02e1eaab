import { PaymentRequiredError } from "../errors.js";
import type { Db } from "../store/Store.js";
import { applyEntry, getBalances, grantCredits, type Currency } from "../store/ledger.js";
import { epochOf, periodStart, type LimitPeriod } from "./epoch.js";
import { microsToUnits, totalUsd, type CostLine } from "./money.js";
import { splitPayment, sumByCurrency, type Funds, type Payment } from "./spendOrder.js";

export interface CreditsOptions {
  /** UTC hour at which DIEM allocations refill and EPOCH key limits reset. */
  resetHourUtc: number;
  now: () => number;
  /** Identifies this process; holds of other (dead) processes are released at start-up. */
  bootId: string;
}

export interface Hold {
  requestId: string;
  accountId: string;
  apiKeyId: string | null;
  funds: Funds;
}

export interface Cost {
  /** USD paid, bundled credits included (as USD-equivalent), in whole units. */
  usd: number;
  diem: number;
}

export interface BalanceSnapshot {
  usd: number;
  bundled: number;
  diem: number;
  stakedDiem: number;
  held: Funds;
}

export interface SettleDetails {
  model: string | null;
  note?: string;
}

const ZERO: Funds = { diem: 0, bundled: 0, usd: 0 };

/** Money that moved for a request, reported after its transaction committed (metrics listen). */
export interface CreditMovement {
  kind: "charge" | "refund";
  currency: Currency;
  micros: number;
  model: string | null;
}

/**
 * Prepaid credits: reserve the most a request can cost before running it, settle the actual
 * cost after, in single immediate transactions with append-only ledger rows. SQLite serialises
 * the transactions, so concurrent requests can never spend the same money twice.
 */
export class Credits {
  private readonly listeners: ((movement: CreditMovement) => void)[] = [];

  constructor(
    private readonly db: Db,
    private readonly options: CreditsOptions,
  ) {}

  /** Called for every charge and refund once it is committed. */
  onMovement(listener: (movement: CreditMovement) => void): void {
    this.listeners.push(listener);
  }

  private emit(movement: CreditMovement): void {
    if (movement.micros > 0) for (const listener of this.listeners) listener(movement);
  }

  /** Start-up: holds left by a process that died between reserve and settle are dropped. */
  releaseOrphanedHolds(): number {
    return this.db.prepare("DELETE FROM reservations WHERE boot_id <> ?").run(this.options.bootId).changes;
  }

  /** `grantedBy`: who granted (an operator key's id, or "cli"), kept on the ledger row. */
  grant(accountId: string, currency: Currency, micros: number, note: string, kind: "grant" | "topup" = "grant", grantedBy: string | null = null): void {
    this.db
      .transaction(() => {
        // Granted DIEM belongs to the current epoch: refill first, or the next touch would
        // expire it as the last epoch's leftover.
        if (currency === "DIEM") this.refreshDiem(accountId);
        grantCredits(this.db, accountId, currency, micros, note, this.options.now(), kind, grantedBy);
      })
      .immediate();
  }

  /** Sets the staked DIEM (the daily allocation); the current epoch's balance is refilled to it now. */
  stake(accountId: string, diemMicros: number): void {
    this.db
      .transaction(() => {
        this.db.prepare("UPDATE accounts SET staked_diem_micros = ?, diem_epoch = NULL WHERE id = ?").run(diemMicros, accountId);
        this.refreshDiem(accountId);
      })
      .immediate();
  }

  snapshot(accountId: string): BalanceSnapshot {
    return this.db
      .transaction(() => {
        this.refreshDiem(accountId);
        const balances = getBalances(this.db, accountId);
        const staked = this.db.prepare("SELECT staked_diem_micros FROM accounts WHERE id = ?").pluck().get(accountId) as number | undefined;
        return { usd: balances.USD, bundled: balances.BUNDLED_CREDITS, diem: balances.DIEM, stakedDiem: staked ?? 0, held: this.heldBy(accountId) };
      })
      .immediate();
  }

  /**
   * Holds the most `maxLines` can cost, or throws 402 INSUFFICIENT_BALANCE when the account
   * (less what other requests hold) or the key's consumption limit cannot cover it.
   */
  reserve(request: { requestId: string; accountId: string; apiKeyId: string | null; maxLines: readonly CostLine[] }): Hold {
    return this.db
      .transaction((): Hold => {
        this.refreshDiem(request.accountId);
        const balances = getBalances(this.db, request.accountId);
        const held = this.heldBy(request.accountId);
        const available: Funds = {
          diem: balances.DIEM - held.diem,
          bundled: balances.BUNDLED_CREDITS - held.bundled,
          usd: balances.USD - held.usd,
        };
        const { payments, covered } = splitPayment(request.maxLines, available);
        if (!covered) {
          throw new PaymentRequiredError(
            `Insufficient balance: this request can cost up to $${microsToUnits(totalUsd(request.maxLines)).toFixed(6)} and the account has ` +
              `$${microsToUnits(available.usd + available.bundled).toFixed(6)} and ${microsToUnits(available.diem).toFixed(6)} DIEM available. ` +
              "Add credits or lower max_tokens.",
          );
        }
        const funds = sumByCurrency(payments);
        if (request.apiKeyId) this.checkKeyLimits(request.apiKeyId, funds);
        if (funds.diem + funds.bundled + funds.usd > 0) {
          this.db
            .prepare(
              `INSERT INTO reservations (request_id, account_id, api_key_id, diem_micros, bundled_micros, usd_micros, boot_id, created_at)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
            )
            .run(request.requestId, request.accountId, request.apiKeyId, funds.diem, funds.bundled, funds.usd, this.options.bootId, this.options.now());
        }
        return { requestId: request.requestId, accountId: request.accountId, apiKeyId: request.apiKeyId, funds };
      })
      .immediate();
  }

  /**
   * Charges the actual cost (never more than the hold) and releases the rest, in one
   * transaction. Settling a hold twice charges once: the reservation row is the guard.
   */
  settle(hold: Hold, lines: readonly CostLine[], details: SettleDetails): { cost: Cost; payments: Payment[] } {
    const settled = this.db
      .transaction(() => {
        const released = this.db.prepare("DELETE FROM reservations WHERE request_id = ?").run(hold.requestId).changes;
        const isZeroHold = hold.funds.diem + hold.funds.bundled + hold.funds.usd === 0;
        if (released === 0 && !isZeroHold) return { cost: { usd: 0, diem: 0 }, payments: [] };
        // Paying from the hold, in spend order, caps the charge at what was reserved.
        const { payments } = splitPayment(lines, isZeroHold ? ZERO : hold.funds);
        const now = this.options.now();
        for (const payment of payments) {
          if (payment.micros === 0) continue;
          applyEntry(this.db, {
            accountId: hold.accountId,
            currency: payment.currency,
            deltaMicros: -payment.micros,
            kind: "charge",
            requestId: hold.requestId,
            apiKeyId: hold.apiKeyId,
            sku: payment.line.sku,
            units: payment.line.units,
            pricePerUnitUsd: payment.line.pricePerUnitUsd,
            model: details.model,
            note: details.note ?? null,
            createdAt: now,
          });
        }
        const paid = sumByCurrency(payments);
        return { cost: { usd: microsToUnits(paid.usd + paid.bundled), diem: microsToUnits(paid.diem) }, payments };
      })
      .immediate();
    for (const payment of settled.payments) this.emit({ kind: "charge", currency: payment.currency, micros: payment.micros, model: details.model });
    return settled;
  }

  /**
   * Gives back everything charged under `requestId` (each ledger charge reversed in its own
   * currency, as a `refund` row). Idempotency is the caller's: run it in the same transaction
   * as the state change that allows exactly one refund (a failed job's refunded_at).
   */
  refund(requestId: string, note: string): Cost {
    const movements: CreditMovement[] = [];
    const refunded = this.db
      .transaction(() => {
        const charges = this.db
          .prepare("SELECT account_id AS accountId, currency, delta_micros AS delta, api_key_id AS apiKeyId, sku, units, price_per_unit_usd AS price, model FROM ledger WHERE request_id = ? AND kind = 'charge'")
          .all(requestId) as { accountId: string; currency: Currency; delta: number; apiKeyId: string | null; sku: string | null; units: number | null; price: number | null; model: string | null }[];
        const now = this.options.now();
        const refunded: Funds = { diem: 0, bundled: 0, usd: 0 };
        for (const charge of charges) {
          applyEntry(this.db, {
            accountId: charge.accountId,
            currency: charge.currency,
            deltaMicros: -charge.delta,
            kind: "refund",
            requestId,
            apiKeyId: charge.apiKeyId,
            sku: charge.sku,
            units: charge.units,
            pricePerUnitUsd: charge.price,
            model: charge.model,
            note,
            createdAt: now,
          });
          refunded[charge.currency === "DIEM" ? "diem" : charge.currency === "USD" ? "usd" : "bundled"] += -charge.delta;
          movements.push({ kind: "refund", currency: charge.currency, micros: -charge.delta, model: charge.model });
        }
        return { usd: microsToUnits(refunded.usd + refunded.bundled), diem: microsToUnits(refunded.diem) };
      })
      .immediate();
    for (const movement of movements) this.emit(movement);
    return refunded;
  }

  /** Spending of a key in its current limit period, holds included. */
  keyPeriodSpend(apiKeyId: string, period: LimitPeriod): { usd: number; diem: number } {
    const since = periodStart(period, this.options.now(), this.options.resetHourUtc);
    const spent = this.db
      .prepare(
        `SELECT COALESCE(SUM(CASE WHEN currency = 'DIEM' THEN 0 ELSE -delta_micros END), 0) AS usd,
                COALESCE(SUM(CASE WHEN currency = 'DIEM' THEN -delta_micros ELSE 0 END), 0) AS diem
         FROM ledger WHERE api_key_id = ? AND kind IN ('charge', 'refund') AND created_at >= ?`,
      )
      .get(apiKeyId, since) as { usd: number; diem: number };
    const held = this.db
      .prepare("SELECT COALESCE(SUM(usd_micros + bundled_micros), 0) AS usd, COALESCE(SUM(diem_micros), 0) AS diem FROM reservations WHERE api_key_id = ?")
      .get(apiKeyId) as { usd: number; diem: number };
    return { usd: spent.usd + held.usd, diem: spent.diem + held.diem };
  }

  private checkKeyLimits(apiKeyId: string, request: Funds): void {
    const key = this.db
      .prepare("SELECT limit_usd_micros AS usd, limit_diem_micros AS diem, limit_period AS period FROM api_keys WHERE id = ?")
      .get(apiKeyId) as { usd: number | null; diem: number | null; period: LimitPeriod } | undefined;
    if (!key || (key.usd === null && key.diem === null)) return;
    const spent = this.keyPeriodSpend(apiKeyId, key.period);
    const window = key.period === "EPOCH" ? "today's epoch" : key.period === "MONTH" ? "this month" : "its lifetime";
    if (key.usd !== null && spent.usd + request.usd + request.bundled > key.usd) {
      throw new PaymentRequiredError(`Insufficient balance: this API key's USD consumption limit of $${microsToUnits(key.usd)} for ${window} is reached.`);
    }
    if (key.diem !== null && spent.diem + request.diem > key.diem) {
      throw new PaymentRequiredError(`Insufficient balance: this API key's DIEM consumption limit of ${microsToUnits(key.diem)} for ${window} is reached.`);
    }
  }

  private heldBy(accountId: string): Funds {
    return this.db
      .prepare(
        `SELECT COALESCE(SUM(diem_micros), 0) AS diem, COALESCE(SUM(bundled_micros), 0) AS bundled, COALESCE(SUM(usd_micros), 0) AS usd
         FROM reservations WHERE account_id = ?`,
      )
      .get(accountId) as Funds;
  }

  /**
   * Refills DIEM at the first touch of a new epoch: the unused allocation of the last epoch
   * expires (except what in-flight requests hold) and the staked amount is allocated afresh.
   * Must run inside a transaction.
   */
  private refreshDiem(accountId: string): void {
    const account = this.db.prepare("SELECT staked_diem_micros AS staked, diem_epoch AS epoch FROM accounts WHERE id = ?").get(accountId) as
      | { staked: number; epoch: number | null }
      | undefined;
    if (!account) return;
    const now = this.options.now();
    const current = epochOf(now, this.options.resetHourUtc);
    if (account.epoch === current) return;
    this.db.prepare("UPDATE accounts SET diem_epoch = ? WHERE id = ?").run(current, accountId);
    const balance = getBalances(this.db, accountId).DIEM;
    const expiring = balance - this.heldBy(accountId).diem;
    if (expiring > 0) applyEntry(this.db, { accountId, currency: "DIEM", deltaMicros: -expiring, kind: "diem_expiry", note: "unused DIEM of the last epoch", createdAt: now });
    if (account.staked > 0) applyEntry(this.db, { accountId, currency: "DIEM", deltaMicros: account.staked, kind: "diem_allocation", note: `epoch ${current} staking allocation`, createdAt: now });
  }
}
