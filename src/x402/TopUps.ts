import { randomUUID } from "node:crypto";
import type { Credits } from "../billing/credits.js";
import { microsToUnits, unitsToMicros } from "../billing/money.js";
import { X402Error } from "../errors.js";
import type { Logger } from "../logger.js";
import { applyEntry } from "../store/ledger.js";
import type { Db } from "../store/Store.js";
import { inTransaction } from "../store/transaction.js";
import { ensureWalletAccount } from "../store/wallets.js";
import {
  findPaymentByIdempotencyKey,
  getPayment,
  insertPayment,
  markPaymentCredited,
  markPaymentUncredited,
  pendingPayments,
  restartPayment,
  staleSettlingPayments,
  submittedPayments,
  updatePayment,
  type PaymentProgress,
  type PaymentSettlement,
  type PaymentRow,
} from "../store/x402Payments.js";
import type { EvmRail, SolanaRail, X402Config } from "../config/walletConfig.js";
import type { X402TopUpResponse } from "../api/x402/schema.js";
import { decodeJsonHeader, encodeJsonHeader } from "./encoding.js";
import { normalizeNetwork } from "./networks.js";
import type { PaymentLimits, VerifiedPayment } from "./payments/types.js";
import type { EvmSettler } from "./settlement/EvmSettler.js";
import { SettlementError } from "./settlement/SettlementError.js";
import type { SolanaSettler } from "./settlement/SolanaSettler.js";
import { loadOnFirstUse } from "../loadOnFirstUse.js";

export interface TopUpResponse {
  body: X402TopUpResponse;
  headers: Record<string, string>;
}

type StoredSettle = { kind: "evm"; authorization: Record<string, string>; signature: `0x${string}` } | { kind: "solana"; transaction: string };

const MAX_PAYMENT_HEADER_BYTES = 64 * 1024;
/** A deferred transfer is submitted no later than this before its authorization expires. */
const SUBMIT_MARGIN_MS = 5_000;
/** A submitted transfer not mined this long after its authorization expired never will be. */
const DROPPED_AFTER_MS = 10 * 60_000;

const invalid = (reason: string, message: string) => new X402Error(400, "X402_INVALID_PAYMENT", message, reason);

/**
 * x402 top-ups: verify a payment offline, then credit the payer's wallet account according to
 * the settlement mode (onchain: once the transfer is mined; deferred: at once, the transfer is
 * submitted by a background pass before the authorization expires; off: at once, never
 * submitted). The payment's chain identity is a UNIQUE key inserted in the same transaction as
 * the credit, so an authorization credits once however often, and however concurrently, it is sent.
 */
export class TopUps {
  // The rails' modules load viem or @solana/kit: only when a payment or a pending settlement needs them.
  private readonly evm: (() => Promise<EvmSettler>) | undefined;
  private readonly solana: (() => Promise<SolanaSettler>) | undefined;
  private readonly inFlight = new Map<string, Promise<unknown>>();
  private timer: NodeJS.Timeout | undefined;
  private working: Promise<void> | undefined;

  constructor(
    private readonly db: Db,
    private readonly config: X402Config,
    private readonly credits: Credits,
    private readonly logger: Logger,
    private readonly now: () => number,
  ) {
    const settles = config.settlement === "onchain" || config.settlement === "deferred";
    const { base, solana } = config;
    this.evm = settles && base ? loadOnFirstUse(async () => new (await import("./settlement/EvmSettler.js")).EvmSettler(base)) : undefined;
    this.solana = settles && solana ? loadOnFirstUse(async () => new (await import("./settlement/SolanaSettler.js")).SolanaSettler(solana)) : undefined;
  }

  /**
   * Loads the settlers of the configured rails now (nothing when no transfer is ever submitted):
   * a wrong key then stops the start, as it would if they loaded with the module.
   */
  async loadSettlers(): Promise<void> {
    await Promise.all([this.evm?.(), this.solana?.()]);
  }

  get enabled(): boolean {
    return this.config.settlement !== undefined && (this.config.base !== undefined || this.config.solana !== undefined);
  }

  get mode(): X402Config["settlement"] {
    return this.config.settlement;
  }

  private get limits(): PaymentLimits {
    return {
      minMicros: unitsToMicros(this.config.minimumTopUpUsd),
      maxMicros: unitsToMicros(this.config.maximumTopUpUsd),
      maxTimeoutSeconds: this.config.maxTimeoutSeconds,
    };
  }

  /** Verifies and credits one PAYMENT-SIGNATURE (or legacy) header. */
  async topUp(header: string): Promise<TopUpResponse> {
    const mode = this.config.settlement;
    if (!mode || !this.enabled) throw topUpsDisabled();
    const payment = await this.verify(header);
    // Deferred credits before the transfer lands: check now, for free, that it would succeed
    // (funds, the token's own signature check, an unused nonce).
    if (mode === "deferred") await this.simulate(payment.settle);
    const accountId = ensureWalletAccount(this.db, payment.payer, payment.family, this.now());

    // The same payment already being settled by this process: wait for that outcome.
    const running = this.inFlight.get(payment.idempotencyKey);
    if (running) {
      await running.catch(() => undefined);
      return this.outcome(this.row(payment.idempotencyKey)!, true);
    }

    const claim = this.claim(payment, accountId, mode);
    if (claim.kind === "replay") return this.outcome(claim.row, true);
    if (claim.kind === "credited") {
      this.logger.info({ wallet: payment.payer, paymentId: claim.row.id, mode, micros: payment.amountMicros }, "x402 top-up credited");
      return this.outcome(claim.row, false);
    }
    const settling = this.settleNow(claim.row, payment).finally(() => this.inFlight.delete(payment.idempotencyKey));
    this.inFlight.set(payment.idempotencyKey, settling);
    await settling;
    return this.outcome(this.row(payment.idempotencyKey)!, false);
  }

  /** Decodes the header (v2 `accepted` payloads, and v1 / provider-hybrid ones) and verifies it for its rail. */
  private async verify(header: string): Promise<VerifiedPayment> {
    const json = decodeJsonHeader(header, MAX_PAYMENT_HEADER_BYTES);
    if (!json) throw invalid("invalid_payload", "Invalid payment header: not base64-encoded JSON");
    if (json.x402Version !== 1 && json.x402Version !== 2) throw invalid("invalid_x402_version", "Invalid payment header: x402Version must be 1 or 2");
    // Dispatch on `accepted`, not on x402Version: some clients send the v1 shape labelled version 2.
    const accepted = typeof json.accepted === "object" && json.accepted !== null ? (json.accepted as Record<string, unknown>) : undefined;
    const scheme = accepted ? accepted.scheme : json.scheme;
    const network = normalizeNetwork(accepted ? accepted.network : json.network);
    if (scheme !== "exact") throw invalid("unsupported_scheme", "Invalid payment header: only the exact scheme is accepted");
    const rail = this.railFor(network);
    if (!rail) {
      const offered = [this.config.base?.network, this.config.solana?.network].filter(Boolean).join(", ");
      throw invalid("invalid_network", `Invalid payment header: network ${String(network ?? (accepted ? accepted.network : json.network))} is not accepted here (${offered})`);
    }
    if (accepted) {
      const same = (a: unknown, b: string) => typeof a === "string" && (rail.kind === "evm" ? a.toLowerCase() === b.toLowerCase() : a === b);
      if (!same(accepted.asset, rail.rail.asset) || !same(accepted.payTo, rail.rail.payTo)) {
        throw invalid("invalid_payment_requirements", "Invalid payment header: the payment was made for an asset or pay-to this node does not offer");
      }
    }
    const now = this.now();
    if (rail.kind === "evm") return (await import("./payments/verifyEvmPayment.js")).verifyEvmPayment(json.payload, rail.rail, this.limits, now);
    return (await import("./payments/verifySolanaPayment.js")).verifySolanaPayment(json.payload, rail.rail, this.limits, now);
  }

  private railFor(network: string | undefined): { kind: "evm"; rail: EvmRail } | { kind: "solana"; rail: SolanaRail } | undefined {
    if (network && this.config.base?.network === network) return { kind: "evm", rail: this.config.base };
    if (network && this.config.solana?.network === network) return { kind: "solana", rail: this.config.solana };
    return undefined;
  }

  /**
   * Records the payment under its UNIQUE key and, unless it must settle first, credits it in
   * the same transaction. A second copy of a payment finds the first's row instead.
   */
  private claim(payment: VerifiedPayment, accountId: string, mode: NonNullable<X402Config["settlement"]>): { kind: "replay" | "credited" | "settle"; row: PaymentRow } {
    return inTransaction(this.db, () => {
      const now = this.now();
      const existing = this.row(payment.idempotencyKey);
      if (existing) {
        if (existing.payload_hash !== payment.payloadHash) {
          throw invalid("nonce_already_used", "Invalid payment header: another authorization with this nonce was already submitted");
        }
        if (existing.credited === 1) return { kind: "replay" as const, row: existing };
        // Only onchain settlement retries a failed payment (nothing was credited for it); a
        // deferred credit that had to be taken back is not handed out again.
        if (existing.settlement === "failed" && mode !== "onchain") return { kind: "replay" as const, row: existing };
        if (existing.settlement !== "failed") {
          throw new X402Error(400, "X402_SETTLEMENT_IN_PROGRESS", "This payment is being settled; send it again shortly for the result", "settlement_in_progress");
        }
      }
      const creditNow = mode !== "onchain";
      const settlement = mode === "off" ? "none" : mode === "deferred" ? "pending" : "settling";
      const id = existing?.id ?? `payment_${randomUUID().replaceAll("-", "")}`;
      if (existing) {
        restartPayment(this.db, id, mode, settlement, payment.validBefore, now);
      } else {
        insertPayment(this.db, {
          id,
          idempotencyKey: payment.idempotencyKey,
          payloadHash: payment.payloadHash,
          accountId,
          wallet: payment.payer,
          network: payment.network,
          asset: payment.asset,
          payTo: payment.payTo,
          amountMicros: payment.amountMicros,
          mode,
          settlement,
          payload: JSON.stringify(storedSettle(payment)),
          validBefore: payment.validBefore,
          now,
        });
      }
      if (creditNow) this.credit(id);
      return { kind: creditNow ? ("credited" as const) : ("settle" as const), row: this.row(payment.idempotencyKey)! };
    });
  }

  /** Credits a payment once: the `credited` flag flips in the same transaction as the ledger row. */
  private credit(id: string, settlement?: PaymentSettlement): boolean {
    return inTransaction(this.db, () => {
      const row = getPayment(this.db, id)!;
      const flipped = markPaymentCredited(this.db, id, this.now(), settlement);
      if (flipped) this.credits.grant(row.account_id, "USD", row.amount_micros, `x402 top-up ${row.id} on ${row.network}`, "topup");
      return flipped;
    });
  }

  /** onchain mode: submit, wait for the receipt, and only then credit. */
  private async settleNow(row: PaymentRow, payment: VerifiedPayment): Promise<void> {
    let tx: string | undefined;
    try {
      tx = await this.submit(payment.settle);
      this.update(row.id, { settlement: "submitted", tx_hash: tx });
      await this.confirm(payment.settle, tx);
    } catch (error) {
      if (error instanceof SettlementError && error.reason === "settlement_pending") return; // the worker finishes it
      const message = error instanceof SettlementError ? error.message : `settlement failed: ${(error as Error).message}`;
      // Not the error object: a chain client's full message can quote the call's arguments, the payment signature among them.
      const logged = error instanceof SettlementError ? message : clip((error as { shortMessage?: string }).shortMessage ?? (error as Error).message);
      this.logger.warn({ wallet: row.wallet, paymentId: row.id, reason: (error as SettlementError).reason, error: logged }, "x402 top-up not settled");
      this.update(row.id, { settlement: "failed", error: `${(error as SettlementError).reason ?? "settlement_failed"}: ${message}` });
      return;
    }
    if (this.credit(row.id, "confirmed")) this.logger.info({ wallet: row.wallet, paymentId: row.id, tx }, "x402 top-up settled on chain and credited");
  }

  private async simulate(settle: VerifiedPayment["settle"]): Promise<void> {
    try {
      if (settle.kind === "evm") await (await this.evm!()).simulate(settle.authorization, settle.signature);
      else await (await this.solana!()).simulate(settle.transaction);
    } catch (error) {
      if (!(error instanceof SettlementError)) throw error;
      throw settlementFailure(error.reason, error.message);
    }
  }

  private async submit(settle: VerifiedPayment["settle"]): Promise<string> {
    if (settle.kind === "evm") return (await this.evm!()).submit(settle.authorization, settle.signature);
    return (await this.solana!()).submit(settle.transaction);
  }

  private async confirm(settle: VerifiedPayment["settle"], tx: string): Promise<void> {
    if (settle.kind === "evm") await (await this.evm!()).confirm(tx as `0x${string}`, settle.authorization);
    else await (await this.solana!()).confirm(tx);
  }

  /** The answer for a payment's current state: 200 once credited, else the settlement error. */
  private outcome(row: PaymentRow, replayed: boolean): TopUpResponse {
    if (row.credited !== 1) {
      if (row.settlement === "failed") {
        const [reason = "settlement_failed", ...rest] = (row.error ?? "settlement_failed: the transfer failed").split(": ");
        throw settlementFailure(reason, rest.join(": ") || reason, row.tx_hash);
      }
      throw new X402Error(
        500,
        "X402_SETTLEMENT_PENDING",
        `The transfer${row.tx_hash ? ` ${row.tx_hash}` : ""} is not confirmed yet; the top-up is credited once it is. Send the same payment again to see the result.`,
        "settlement_pending",
        row.tx_hash ? { transaction: row.tx_hash } : {},
      );
    }
    const balance = this.credits.snapshot(row.account_id);
    const headers: Record<string, string> = {
      "PAYMENT-RESPONSE": encodeJsonHeader({ success: true, network: row.network, payer: row.wallet, transaction: row.tx_hash ?? "", amount: String(row.amount_micros) }),
    };
    if (replayed) headers["Idempotent-Replayed"] = "true";
    return {
      body: {
        success: true,
        data: { walletAddress: row.wallet, amountCredited: microsToUnits(row.amount_micros), newBalance: microsToUnits(balance.usd + balance.bundled), paymentId: row.id },
      },
      headers,
    };
  }

  private row(idempotencyKey: string): PaymentRow | undefined {
    return findPaymentByIdempotencyKey(this.db, idempotencyKey);
  }

  private update(id: string, fields: PaymentProgress): void {
    updatePayment(this.db, id, fields, this.now());
  }

  // -------------------------------------------------------------------------------------
  // Background settlement: deferred submissions, and receipts nobody is waiting for.

  /** Runs the settlement pass every deferredIntervalMs (only when transfers are submitted at all). */
  start(): void {
    if (!this.evm && !this.solana) return;
    this.timer = setInterval(() => void this.settlePending(), this.config.deferredIntervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.working;
    await Promise.allSettled([...this.inFlight.values()]);
  }

  /** One pass: submit deferred transfers, then resolve submitted ones. Never runs twice at once. */
  settlePending(): Promise<void> {
    this.working ??= this.pass().finally(() => (this.working = undefined));
    return this.working;
  }

  private async pass(): Promise<void> {
    const now = this.now();
    const pending = pendingPayments(this.db, 50);
    for (const row of pending) {
      if (now > row.valid_before - SUBMIT_MARGIN_MS) {
        this.fail(row, "authorization_expired: the authorization expired before the transfer could be submitted");
        continue;
      }
      try {
        const tx = await this.submit(loadSettle(row));
        this.update(row.id, { settlement: "submitted", tx_hash: tx });
      } catch (error) {
        this.fail(row, `${(error as SettlementError).reason ?? "settlement_failed"}: ${(error as Error).message}`);
      }
    }
    // Claimed by a process that stopped before it recorded a transaction: the token contract knows.
    const stale = staleSettlingPayments(this.db, now - 2 * (this.config.base?.receiptTimeoutMs ?? 120_000), 50);
    for (const row of stale) {
      if (this.inFlight.has(row.idempotency_key)) continue;
      const settle = loadSettle(row);
      const used =
        settle.kind === "evm"
          ? await this.evm!()
              .then((evm) => evm.authorizationUsed(settle.authorization))
              .catch(() => undefined)
          : false;
      if (used === true) this.credit(row.id, "confirmed");
      else if (used === false && now > row.valid_before) this.fail(row, "transfer_dropped: the transfer was never submitted before its authorization expired");
    }
    const submitted = submittedPayments(this.db, 100);
    for (const row of submitted) {
      if (this.inFlight.has(row.idempotency_key) || !row.tx_hash) continue;
      const settle = loadSettle(row);
      try {
        const state =
          settle.kind === "evm" ? await (await this.evm!()).receiptState(row.tx_hash as `0x${string}`, settle.authorization) : await (await this.solana!()).status(row.tx_hash);
        if (state.state === "confirmed") {
          if (row.credited === 1) this.update(row.id, { settlement: "confirmed" });
          else this.credit(row.id, "confirmed");
          this.logger.info({ wallet: row.wallet, paymentId: row.id, tx: row.tx_hash }, "x402 transfer confirmed");
        } else if (state.state === "failed") {
          this.fail(row, `transfer_failed: ${state.reason}`);
        } else if (this.now() > row.valid_before + DROPPED_AFTER_MS) {
          this.fail(row, "transfer_dropped: the transfer was not mined before its authorization expired");
        }
      } catch (error) {
        this.logger.warn({ paymentId: row.id, err: error }, "could not check an x402 transfer; will retry");
      }
    }
  }

  /** Marks a payment failed; a deferred credit is taken back (as much as is not held or spent). */
  private fail(row: PaymentRow, error: string): void {
    inTransaction(this.db, () => {
      let note = error;
      if (row.credited === 1) {
        const balance = this.credits.snapshot(row.account_id);
        const available = Math.max(0, balance.usd - balance.held.usd);
        const taken = Math.min(available, row.amount_micros);
        if (taken > 0) {
          applyEntry(this.db, {
            accountId: row.account_id,
            currency: "USD",
            deltaMicros: -taken,
            kind: "topup_reversal",
            note: `x402 top-up ${row.id} reversed: ${error}`,
            createdAt: this.now(),
          });
        }
        if (taken < row.amount_micros) note += ` (reversed ${taken} of ${row.amount_micros} micro-USD: the rest was already spent)`;
        markPaymentUncredited(this.db, row.id);
      }
      this.update(row.id, { settlement: "failed", error: note });
    });
    this.logger.warn({ wallet: row.wallet, paymentId: row.id, error: clip(error) }, "x402 payment failed to settle");
  }
}

const clip = (error: string) => error.slice(0, 300);

export function topUpsDisabled(): X402Error {
  return new X402Error(
    501,
    "X402_TOPUPS_DISABLED",
    "Wallet top-ups are not enabled on this node: its operator has not configured an x402 settlement mode (--x402-settlement) and payment rail (--wallet-config).",
  );
}

/** 400 PAYMENT_VERIFICATION_FAILED for a transfer that fails; 500 when the chain node could not be asked. */
function settlementFailure(reason: string, message: string, transaction?: string | null): X402Error {
  const status = reason === "settlement_node_unavailable" ? 500 : 400;
  return new X402Error(status, "PAYMENT_VERIFICATION_FAILED", `Payment verification failed: ${message}`, reason, transaction ? { transaction } : {});
}

function storedSettle(payment: VerifiedPayment): StoredSettle {
  if (payment.settle.kind === "solana") return payment.settle;
  const a = payment.settle.authorization;
  return {
    kind: "evm",
    signature: payment.settle.signature,
    authorization: { from: a.from, to: a.to, value: String(a.value), validAfter: String(a.validAfter), validBefore: String(a.validBefore), nonce: a.nonce },
  };
}

function loadSettle(row: PaymentRow): VerifiedPayment["settle"] {
  const stored = JSON.parse(row.payload) as StoredSettle;
  if (stored.kind === "solana") return stored;
  const a = stored.authorization;
  return {
    kind: "evm",
    signature: stored.signature,
    authorization: {
      from: a.from as `0x${string}`,
      to: a.to as `0x${string}`,
      value: BigInt(a.value!),
      validAfter: BigInt(a.validAfter!),
      validBefore: BigInt(a.validBefore!),
      nonce: a.nonce as `0x${string}`,
    },
  };
}
