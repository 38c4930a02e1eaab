import { statement, type Db } from "./Store.js";

/**
 * Stored Responses API answers (POST /responses with `store`), owner-only: every read and
 * delete names the account, so another account's id reads as absent. Items are JSON as the
 * API shapes them; this module does not look inside.
 */

export interface StoredResponse {
  id: string;
  accountId: string;
  model: string;
  previousResponseId: string | null;
  /** The items of the earlier turns this response continued (their context, input and output). */
  contextItems: unknown[];
  /** This request's own input items. */
  inputItems: unknown[];
  /** The response object as it was answered. */
  response: Record<string, unknown>;
  createdAt: number;
  expiresAt: number;
}

interface Row {
  id: string;
  account_id: string;
  model: string;
  previous_response_id: string | null;
  context_items: string;
  input_items: string;
  response: string;
  created_at: number;
  expires_at: number;
}

function toStoredResponse(row: Row): StoredResponse {
  return {
    id: row.id,
    accountId: row.account_id,
    model: row.model,
    previousResponseId: row.previous_response_id,
    contextItems: JSON.parse(row.context_items) as unknown[],
    inputItems: JSON.parse(row.input_items) as unknown[],
    response: JSON.parse(row.response) as Record<string, unknown>,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
  };
}

export function insertStoredResponse(db: Db, stored: StoredResponse): void {
  statement(
    db,
    `INSERT INTO responses (id, account_id, model, previous_response_id, context_items, input_items, response, created_at, expires_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    stored.id,
    stored.accountId,
    stored.model,
    stored.previousResponseId,
    JSON.stringify(stored.contextItems),
    JSON.stringify(stored.inputItems),
    JSON.stringify(stored.response),
    stored.createdAt,
    stored.expiresAt,
  );
}

/** The account's response with this id, unless it expired (at `now`). */
export function findStoredResponse(db: Db, accountId: string, id: string, now: number): StoredResponse | undefined {
  const row = statement(db, "SELECT * FROM responses WHERE id = ? AND account_id = ? AND expires_at > ?").get(id, accountId, now) as Row | undefined;
  return row ? toStoredResponse(row) : undefined;
}

/** An item (input or output) of one of the account's unexpired responses, by its id; the most recent wins. */
export function findStoredItem(db: Db, accountId: string, itemId: string, now: number): unknown {
  const found = statement(
    db,
    `SELECT item FROM (
         SELECT item.value AS item, responses.created_at AS at FROM responses, json_each(responses.response, '$.output') AS item
           WHERE responses.account_id = @accountId AND responses.expires_at > @now AND json_extract(item.value, '$.id') = @itemId
         UNION ALL
         SELECT item.value AS item, responses.created_at AS at FROM responses, json_each(responses.input_items) AS item
           WHERE responses.account_id = @accountId AND responses.expires_at > @now AND json_extract(item.value, '$.id') = @itemId
       ) ORDER BY at DESC LIMIT 1`,
  )
    .pluck()
    .get({ accountId, itemId, now }) as string | undefined;
  return found === undefined ? undefined : JSON.parse(found);
}

/** Deletes the account's response; false when it has none with this id (or it expired). */
export function deleteStoredResponse(db: Db, accountId: string, id: string, now: number): boolean {
  return statement(db, "DELETE FROM responses WHERE id = ? AND account_id = ? AND expires_at > ?").run(id, accountId, now).changes > 0;
}

/** Deletes every response past its retention; returns how many. */
export function purgeExpiredResponses(db: Db, now: number): number {
  return statement(db, "DELETE FROM responses WHERE expires_at <= ?").run(now).changes;
}
