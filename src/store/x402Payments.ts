import { statement, type Db } from "./Store.js";

/**
 * x402 payments: one row per payment authorization, under its UNIQUE chain identity
 * (idempotency_key). `credited` flips to 1 in the same transaction as the ledger's topup
 * row; what the settlement states mean is x402/TopUps.ts's business.
 */

export type PaymentMode = "onchain" | "deferred" | "off";
export type PaymentSettlement = "settling" | "pending" | "submitted" | "confirmed" | "failed" | "none";

/** The stored row, with the table's column names. */
export interface PaymentRow {
  id: string;
  idempotency_key: string;
  payload_hash: string;
  account_id: string;
  wallet: string;
  network: string;
  amount_micros: number;
  mode: PaymentMode;
  settlement: PaymentSettlement;
  credited: 0 | 1;
  /** JSON of what a settler needs to submit the transfer. */
  payload: string;
  valid_before: number;
  tx_hash: string | null;
  error: string | null;
  updated_at: number;
}

export interface NewPayment {
  id: string;
  idempotencyKey: string;
  payloadHash: string;
  accountId: string;
  wallet: string;
  network: string;
  asset: string;
  payTo: string;
  amountMicros: number;
  mode: PaymentMode;
  settlement: PaymentSettlement;
  payload: string;
  validBefore: number;
  now: number;
}

/** Inserted not credited; the caller credits it (markPaymentCredited) in the same or a later transaction. */
export function insertPayment(db: Db, payment: NewPayment): void {
  statement(
    db,
    `INSERT INTO x402_payments (id, idempotency_key, payload_hash, account_id, wallet, network, asset, pay_to, amount_micros, mode,
       settlement, credited, payload, valid_before, created_at, updated_at)
     VALUES (@id, @idempotencyKey, @payloadHash, @accountId, @wallet, @network, @asset, @payTo, @amountMicros, @mode,
       @settlement, 0, @payload, @validBefore, @now, @now)`,
  ).run(payment);
}

/** A failed payment sent again: it starts over, not credited, under the given mode and settlement. */
export function restartPayment(db: Db, id: string, mode: PaymentMode, settlement: PaymentSettlement, validBefore: number, now: number): void {
  statement(db, "UPDATE x402_payments SET mode = ?, settlement = ?, credited = 0, error = NULL, tx_hash = NULL, valid_before = ?, updated_at = ? WHERE id = ?").run(
    mode,
    settlement,
    validBefore,
    now,
    id,
  );
}

export function getPayment(db: Db, id: string): PaymentRow | undefined {
  return statement(db, "SELECT * FROM x402_payments WHERE id = ?").get(id) as PaymentRow | undefined;
}

export function findPaymentByIdempotencyKey(db: Db, idempotencyKey: string): PaymentRow | undefined {
  return statement(db, "SELECT * FROM x402_payments WHERE idempotency_key = ?").get(idempotencyKey) as PaymentRow | undefined;
}

/** Flips `credited` (and sets the settlement, when given); false when it was already credited. */
export function markPaymentCredited(db: Db, id: string, now: number, settlement?: PaymentSettlement): boolean {
  return (
    statement(db, `UPDATE x402_payments SET credited = 1, ${settlement ? "settlement = @settlement," : ""} updated_at = @now WHERE id = @id AND credited = 0`).run({
      id,
      now,
      ...(settlement ? { settlement } : {}),
    }).changes === 1
  );
}

/** The credit was taken back (a deferred transfer failed). */
export function markPaymentUncredited(db: Db, id: string): void {
  statement(db, "UPDATE x402_payments SET credited = 0 WHERE id = ?").run(id);
}

export type PaymentProgress = Partial<Pick<PaymentRow, "settlement" | "tx_hash" | "error">>;

export function updatePayment(db: Db, id: string, fields: PaymentProgress, now: number): void {
  // Column names come from PaymentProgress's keys, never from input.
  const sets = Object.keys(fields).map((k) => `${k} = @${k}`);
  statement(db, `UPDATE x402_payments SET ${sets.join(", ")}, updated_at = @now WHERE id = @id`).run({ ...fields, id, now });
}

/** Deferred transfers not submitted yet, the soonest to expire first. */
export function pendingPayments(db: Db, limit: number): PaymentRow[] {
  return statement(db, "SELECT * FROM x402_payments WHERE settlement = 'pending' ORDER BY valid_before LIMIT ?").all(limit) as PaymentRow[];
}

/** Payments claimed for settlement before `before` and never given a transaction. */
export function staleSettlingPayments(db: Db, before: number, limit: number): PaymentRow[] {
  return statement(db, "SELECT * FROM x402_payments WHERE settlement = 'settling' AND updated_at < ? LIMIT ?").all(before, limit) as PaymentRow[];
}

/** Transfers submitted and not yet seen mined, the oldest first. */
export function submittedPayments(db: Db, limit: number): PaymentRow[] {
  return statement(db, "SELECT * FROM x402_payments WHERE settlement = 'submitted' ORDER BY updated_at LIMIT ?").all(limit) as PaymentRow[];
}

/** Every payment, oldest first. */
export function listPayments(db: Db): PaymentRow[] {
  return statement(db, "SELECT * FROM x402_payments ORDER BY created_at, rowid").all() as PaymentRow[];
}
