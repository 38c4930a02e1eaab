import { statement, type Db } from "./Store.js";

/**
 * Holds: what an in-flight request may at most cost, per currency, in micros. A row exists
 * from reserve to settle; the rules (what a hold covers, when it is released) live in
 * billing/credits.ts.
 */

/** Micros held per currency (bundled credits apart from USD). */
export interface HeldMicros {
  diem: number;
  bundled: number;
  usd: number;
}

export interface NewReservation {
  requestId: string;
  accountId: string;
  apiKeyId: string | null;
  held: HeldMicros;
  /** The process that holds it; holds of other (dead) processes are released at start-up. */
  bootId: string;
  createdAt: number;
}

export function insertReservation(db: Db, reservation: NewReservation): void {
  const { held } = reservation;
  statement(
    db,
    `INSERT INTO reservations (request_id, account_id, api_key_id, diem_micros, bundled_micros, usd_micros, boot_id, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(reservation.requestId, reservation.accountId, reservation.apiKeyId, held.diem, held.bundled, held.usd, reservation.bootId, reservation.createdAt);
}

/** Drops a request's hold; whether there was one (settling twice must charge once). */
export function deleteReservation(db: Db, requestId: string): boolean {
  return statement(db, "DELETE FROM reservations WHERE request_id = ?").run(requestId).changes > 0;
}

/** Drops every hold not made by `bootId`; how many. */
export function deleteReservationsOfOtherBoots(db: Db, bootId: string): number {
  return statement(db, "DELETE FROM reservations WHERE boot_id <> ?").run(bootId).changes;
}

/** What an account's in-flight requests hold. */
export function heldByAccount(db: Db, accountId: string): HeldMicros {
  return statement(
    db,
    `SELECT COALESCE(SUM(diem_micros), 0) AS diem, COALESCE(SUM(bundled_micros), 0) AS bundled, COALESCE(SUM(usd_micros), 0) AS usd
       FROM reservations WHERE account_id = ?`,
  ).get(accountId) as HeldMicros;
}

/** What a key's in-flight requests hold: USD (bundled credits included) and DIEM. */
export function heldByKey(db: Db, apiKeyId: string): { usd: number; diem: number } {
  return statement(db, "SELECT COALESCE(SUM(usd_micros + bundled_micros), 0) AS usd, COALESCE(SUM(diem_micros), 0) AS diem FROM reservations WHERE api_key_id = ?").get(
    apiKeyId,
  ) as {
    usd: number;
    diem: number;
  };
}

/** Holds in flight, node-wide (none once every request has settled). */
export function countReservations(db: Db): number {
  return statement(db, "SELECT COUNT(*) FROM reservations").pluck().get() as number;
}
