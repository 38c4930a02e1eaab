import type { Db } from "./Store.js";

/**
 * Runs `fn` in one IMMEDIATE transaction: the write lock is taken at BEGIN, so two processes
 * (or a busy-timeout retry) never both read a balance and then both spend it. Nested calls
 * become savepoints of the outer transaction. Throwing rolls everything back.
 */
export function inTransaction<T>(db: Db, fn: () => T): T {
  return db.transaction(fn).immediate();
}

/**
 * Runs `fn` in one DEFERRED transaction: several reads see the same snapshot (a page and
 * its total count agree) without taking the write lock.
 */
export function inReadTransaction<T>(db: Db, fn: () => T): T {
  return db.transaction(fn).deferred();
}
