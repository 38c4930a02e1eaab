import { PaymentRequiredError } from "../errors.js";
import { getDiemStake, setDiemEpoch, setStakedDiem } from "../store/accounts.js";
import { getKeySpendLimits } from "../store/apiKeys.js";
import { applyEntry, chargesOfRequest, getBalances, grantCredits, keyNetSpendSince, type Currency } from "../store/ledger.js";
import { deleteReservation, deleteReservationsOfOtherBoots, heldByAccount, heldByKey, insertReservation } from "../store/reservations.js";
import type { Db } from "../store/Store.js";
import { inTransaction } from "../store/transaction.js";
import { epochOf, periodStart, type LimitPeriod } from "./epoch.js";
import { isOutputTokenLine } from "./pricing.js";
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
    return deleteReservationsOfOtherBoots(this.db, this.options.bootId);
  }

  /** `grantedBy`: who granted (an operator key's id, or "cli"), kept on the ledger row. */
  grant(accountId: string, currency: Currency, micros: number, note: string, kind: "grant" | "topup" = "grant", grantedBy: string | null = null): void {
    inTransaction(this.db, () => {
      // Granted DIEM belongs to the current epoch: refill first, or the next touch would
      // expire it as the last epoch's leftover.
      if (currency === "DIEM") this.refreshDiem(accountId);
      grantCredits(this.db, accountId, currency, micros, note, this.options.now(), kind, grantedBy);
    });
  }

  /** Sets the staked DIEM (the daily allocation); the current epoch's balance is refilled to it now. */
  stake(accountId: string, diemMicros: number): void {
    inTransaction(this.db, () => {
      setStakedDiem(this.db, accountId, diemMicros);
      this.refreshDiem(accountId);
    });
  }

  snapshot(accountId: string): BalanceSnapshot {
    return inTransaction(this.db, () => {
      this.refreshDiem(accountId);
      const balances = getBalances(this.db, accountId);
      const staked = getDiemStake(this.db, accountId)?.stakedMicros;
      return { usd: balances.USD, bundled: balances.BUNDLED_CREDITS, diem: balances.DIEM, stakedDiem: staked ?? 0, held: heldByAccount(this.db, accountId) };
    });
  }

  /**
   * Holds the most `maxLines` can cost, or throws 402 INSUFFICIENT_BALANCE when the account
   * (less what other requests hold) or the key's consumption limit cannot cover it.
   */
  reserve(request: { requestId: string; accountId: string; apiKeyId: string | null; maxLines: readonly CostLine[] }): Hold {
    return inTransaction(this.db, (): Hold => {
      const funds = this.fundsToHold(request);
      if (funds.diem + funds.bundled + funds.usd > 0) {
        insertReservation(this.db, {
          requestId: request.requestId,
          accountId: request.accountId,
          apiKeyId: request.apiKeyId,
          held: funds,
          bootId: this.options.bootId,
          createdAt: this.options.now(),
        });
      }
      return { requestId: request.requestId, accountId: request.accountId, apiKeyId: request.apiKeyId, funds };
    });
  }

  /** Throws what reserve() would (402) if it could not hold `maxLines` now; holds nothing. */
  checkReservable(request: { accountId: string; apiKeyId: string | null; maxLines: readonly CostLine[] }): void {
    inTransaction(this.db, () => this.fundsToHold(request));
  }

  /** Whether reserve() would hold `maxLines` now (holding nothing). */
  canReserve(request: { accountId: string; apiKeyId: string | null; maxLines: readonly CostLine[] }): boolean {
    try {
      this.checkReservable(request);
      return true;
    } catch (error) {
      if (error instanceof PaymentRequiredError) return false;
      throw error;
    }
  }

  /** What a hold of `maxLines` takes from each currency; 402 when the account or the key's limits cannot cover it. In a transaction. */
  private fundsToHold(request: { accountId: string; apiKeyId: string | null; maxLines: readonly CostLine[] }): Funds {
    this.refreshDiem(request.accountId);
    const balances = getBalances(this.db, request.accountId);
    const held = heldByAccount(this.db, request.accountId);
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
          // max_tokens sets the hold only where output tokens are priced (text generation).
          (request.maxLines.some(isOutputTokenLine) ? "Add credits or lower max_tokens." : "Add credits."),
      );
    }
    const funds = sumByCurrency(payments);
    if (request.apiKeyId) this.checkKeyLimits(request.apiKeyId, funds);
    return funds;
  }

  /**
   * Charges the actual cost (never more than the hold) and releases the rest, in one
   * transaction. Settling a hold twice charges once: the reservation row is the guard.
   */
  settle(hold: Hold, lines: readonly CostLine[], details: SettleDetails): { cost: Cost; payments: Payment[] } {
    const settled = inTransaction(this.db, () => {
      const released = deleteReservation(this.db, hold.requestId);
      const isZeroHold = hold.funds.diem + hold.funds.bundled + hold.funds.usd === 0;
      if (!released && !isZeroHold) return { cost: { usd: 0, diem: 0 }, payments: [] };
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
    });
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
    const refunded = inTransaction(this.db, () => {
      const charges = chargesOfRequest(this.db, requestId);
      const now = this.options.now();
      const refunded: Funds = { diem: 0, bundled: 0, usd: 0 };
      for (const charge of charges) {
        applyEntry(this.db, {
          accountId: charge.accountId,
          currency: charge.currency,
          deltaMicros: -charge.deltaMicros,
          kind: "refund",
          requestId,
          apiKeyId: charge.apiKeyId,
          sku: charge.sku,
          units: charge.units,
          pricePerUnitUsd: charge.pricePerUnitUsd,
          model: charge.model,
          note,
          createdAt: now,
        });
        refunded[charge.currency === "DIEM" ? "diem" : charge.currency === "USD" ? "usd" : "bundled"] += -charge.deltaMicros;
        movements.push({ kind: "refund", currency: charge.currency, micros: -charge.deltaMicros, model: charge.model });
      }
      return { usd: microsToUnits(refunded.usd + refunded.bundled), diem: microsToUnits(refunded.diem) };
    });
    for (const movement of movements) this.emit(movement);
    return refunded;
  }

  /** Spending of a key in its current limit period, holds included. */
  keyPeriodSpend(apiKeyId: string, period: LimitPeriod): { usd: number; diem: number } {
    const since = periodStart(period, this.options.now(), this.options.resetHourUtc);
    const spent = keyNetSpendSince(this.db, apiKeyId, since);
    const held = heldByKey(this.db, apiKeyId);
    return { usd: spent.usd + held.usd, diem: spent.diem + held.diem };
  }

  private checkKeyLimits(apiKeyId: string, request: Funds): void {
    const limits = getKeySpendLimits(this.db, apiKeyId);
    if (!limits || (limits.usdMicros === null && limits.diemMicros === null)) return;
    const spent = this.keyPeriodSpend(apiKeyId, limits.period);
    const window = limits.period === "EPOCH" ? "today's epoch" : limits.period === "MONTH" ? "this month" : "its lifetime";
    if (limits.usdMicros !== null && spent.usd + request.usd + request.bundled > limits.usdMicros) {
      throw new PaymentRequiredError(`Insufficient balance: this API key's USD consumption limit of $${microsToUnits(limits.usdMicros)} for ${window} is reached.`);
    }
    if (limits.diemMicros !== null && spent.diem + request.diem > limits.diemMicros) {
      throw new PaymentRequiredError(`Insufficient balance: this API key's DIEM consumption limit of ${microsToUnits(limits.diemMicros)} for ${window} is reached.`);
    }
  }

  /**
   * Refills DIEM at the first touch of a new epoch: the unused allocation of the last epoch
   * expires (except what in-flight requests hold) and the staked amount is allocated afresh.
   * Must run inside a transaction.
   */
  private refreshDiem(accountId: string): void {
    const stake = getDiemStake(this.db, accountId);
    if (!stake) return;
    const now = this.options.now();
    const current = epochOf(now, this.options.resetHourUtc);
    if (stake.epoch === current) return;
    setDiemEpoch(this.db, accountId, current);
    const balance = getBalances(this.db, accountId).DIEM;
    const expiring = balance - heldByAccount(this.db, accountId).diem;
    if (expiring > 0) applyEntry(this.db, { accountId, currency: "DIEM", deltaMicros: -expiring, kind: "diem_expiry", note: "unused DIEM of the last epoch", createdAt: now });
    if (stake.stakedMicros > 0)
      applyEntry(this.db, { accountId, currency: "DIEM", deltaMicros: stake.stakedMicros, kind: "diem_allocation", note: `epoch ${current} staking allocation`, createdAt: now });
  }
}
