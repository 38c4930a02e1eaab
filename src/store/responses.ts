import { createHash } from "node:crypto";
import { statement, type Db } from "./Store.js";
import { inTransaction } from "./transaction.js";

/**
 * Stored Responses API answers (POST /responses with `store`), owner-only: every read and
 * delete names the account, so another account's id reads as absent. Items are JSON as the
 * API shapes them; this module looks inside only for long strings, which it keeps once in
 * response_blobs however many responses hold them (a conversation stores its earlier turns
 * with every later one), and puts back on every read.
 */

/** Strings of stored items from this many characters are kept as blobs (a short one costs more as a blob than inline). */
export const BLOB_MIN_CHARS = 4096;

/** Where a long string sat in a response's items: its field, and the keys and indexes from the item list. */
interface BlobRef {
  field: "context" | "input";
  path: (string | number)[];
  hash: string;
}

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

function toStoredResponse(db: Db, row: Row): StoredResponse {
  const contextItems = JSON.parse(row.context_items) as unknown[];
  const inputItems = JSON.parse(row.input_items) as unknown[];
  for (const { field, path, data } of blobsOf(db, row.id)) setAt(field === "context" ? contextItems : inputItems, path, data);
  return {
    id: row.id,
    accountId: row.account_id,
    model: row.model,
    previousResponseId: row.previous_response_id,
    contextItems,
    inputItems,
    response: JSON.parse(row.response) as Record<string, unknown>,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
  };
}

export function insertStoredResponse(db: Db, stored: StoredResponse): void {
  const refs: BlobRef[] = [];
  const blobs = new Map<string, string>();
  const keep = (field: BlobRef["field"]) => (path: (string | number)[], text: string) => {
    const hash = createHash("sha256").update(text).digest("hex");
    blobs.set(hash, text);
    refs.push({ field, path, hash });
  };
  const contextItems = withoutLongStrings(stored.contextItems, keep("context"));
  const inputItems = withoutLongStrings(stored.inputItems, keep("input"));
  inTransaction(db, () => {
    statement(
      db,
      `INSERT INTO responses (id, account_id, model, previous_response_id, context_items, input_items, response, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      stored.id,
      stored.accountId,
      stored.model,
      stored.previousResponseId,
      JSON.stringify(contextItems),
      JSON.stringify(inputItems),
      JSON.stringify(stored.response),
      stored.createdAt,
      stored.expiresAt,
    );
    const keepBlob = statement(db, "INSERT OR IGNORE INTO response_blobs (hash, data) VALUES (?, ?)");
    for (const [hash, data] of blobs) keepBlob.run(hash, data);
    const addRef = statement(db, "INSERT INTO response_blob_refs (response_id, field, path, hash) VALUES (?, ?, ?, ?)");
    for (const ref of refs) addRef.run(stored.id, ref.field, JSON.stringify(ref.path), ref.hash);
  });
}

/** A path as a walk builds it: each step links to its parent, and only a kept string's path becomes an array. */
type PathStep = { parent: PathStep | null; key: string | number } | null;

/** A copy of `value` with every string of BLOB_MIN_CHARS or more replaced by "" and handed to `keep` with its path. */
function withoutLongStrings(value: unknown, keep: (path: (string | number)[], text: string) => void, at: PathStep = null): unknown {
  if (typeof value === "string") {
    if (value.length < BLOB_MIN_CHARS) return value;
    const path: (string | number)[] = [];
    for (let step = at; step; step = step.parent) path.unshift(step.key);
    keep(path, value);
    return "";
  }
  if (Array.isArray(value)) return value.map((item, index) => withoutLongStrings(item, keep, { parent: at, key: index }));
  if (value !== null && typeof value === "object") {
    const copy: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) copy[key] = withoutLongStrings(item, keep, { parent: at, key });
    return copy;
  }
  return value;
}

/** The long strings of a response's items, with where each goes. */
function blobsOf(db: Db, responseId: string): { field: BlobRef["field"]; path: (string | number)[]; data: string }[] {
  const rows = statement(db, "SELECT ref.field, ref.path, blob.data FROM response_blob_refs AS ref JOIN response_blobs AS blob USING (hash) WHERE ref.response_id = ?").all(
    responseId,
  ) as {
    field: BlobRef["field"];
    path: string;
    data: string;
  }[];
  return rows.map((row) => ({ field: row.field, path: JSON.parse(row.path) as (string | number)[], data: row.data }));
}

function setAt(root: unknown, path: (string | number)[], text: string): void {
  let node = root as Record<string | number, unknown>;
  for (const step of path.slice(0, -1)) node = node[step] as Record<string | number, unknown>;
  node[path.at(-1)!] = text;
}

/** Blobs no response refers to any more (after deletes). */
function dropUnreferencedBlobs(db: Db): void {
  statement(db, "DELETE FROM response_blobs WHERE NOT EXISTS (SELECT 1 FROM response_blob_refs AS ref WHERE ref.hash = response_blobs.hash)").run();
}

/** The account's response with this id, unless it expired (at `now`). */
export function findStoredResponse(db: Db, accountId: string, id: string, now: number): StoredResponse | undefined {
  const row = statement(db, "SELECT * FROM responses WHERE id = ? AND account_id = ? AND expires_at > ?").get(id, accountId, now) as Row | undefined;
  return row ? toStoredResponse(db, row) : undefined;
}

/** An item (input or output) of one of the account's unexpired responses, by its id; the most recent wins. */
export function findStoredItem(db: Db, accountId: string, itemId: string, now: number): unknown {
  const found = statement(
    db,
    `SELECT item, response_id AS responseId, field, position FROM (
         SELECT item.value AS item, responses.id AS response_id, 'output' AS field, item.key AS position, responses.created_at AS at
           FROM responses, json_each(responses.response, '$.output') AS item
           WHERE responses.account_id = @accountId AND responses.expires_at > @now AND json_extract(item.value, '$.id') = @itemId
         UNION ALL
         SELECT item.value AS item, responses.id AS response_id, 'input' AS field, item.key AS position, responses.created_at AS at
           FROM responses, json_each(responses.input_items) AS item
           WHERE responses.account_id = @accountId AND responses.expires_at > @now AND json_extract(item.value, '$.id') = @itemId
       ) ORDER BY at DESC LIMIT 1`,
  ).get({ accountId, itemId, now }) as { item: string; responseId: string; field: string; position: number } | undefined;
  if (!found) return undefined;
  // The item where it sat in its list, so its blobs' paths (from the list) find their places.
  const list: Record<number, unknown> = { [found.position]: JSON.parse(found.item) };
  if (found.field === "input") {
    for (const { field, path, data } of blobsOf(db, found.responseId)) if (field === "input" && path[0] === found.position) setAt(list, path, data);
  }
  return list[found.position];
}

/** Deletes the account's response; false when it has none with this id (or it expired). */
export function deleteStoredResponse(db: Db, accountId: string, id: string, now: number): boolean {
  return inTransaction(db, () => {
    const deleted = statement(db, "DELETE FROM responses WHERE id = ? AND account_id = ? AND expires_at > ?").run(id, accountId, now).changes > 0;
    if (deleted) dropUnreferencedBlobs(db);
    return deleted;
  });
}

/** Deletes every response past its retention; returns how many. */
export function purgeExpiredResponses(db: Db, now: number): number {
  return inTransaction(db, () => {
    const purged = statement(db, "DELETE FROM responses WHERE expires_at <= ?").run(now).changes;
    if (purged > 0) dropUnreferencedBlobs(db);
    return purged;
  });
}
