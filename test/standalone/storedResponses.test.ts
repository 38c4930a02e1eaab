import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  BLOB_MIN_CHARS,
  deleteStoredResponse,
  findStoredItem,
  findStoredResponse,
  insertStoredResponse,
  purgeExpiredResponses,
  type StoredResponse,
} from "../../src/store/responses.js";
import { openStore, type Db } from "../../src/store/Store.js";

/** Stored responses keep each long string of their items once, however many responses hold it. */
let dir: string;
let db: Db;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "hearth-responses-"));
  db = openStore(join(dir, "hearth.db"));
});
afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const FILE = `data:application/pdf;base64,${"JVBERi0xLjcK".repeat(50_000)}`;
const PASTED = "a long pasted text ".repeat(400);
const fileTurn = {
  id: "msg_1",
  type: "message",
  role: "user",
  content: [
    { type: "input_file", filename: "a.pdf", file_data: FILE },
    { type: "input_text", text: PASTED },
  ],
};
const reply = { id: "msg_2", type: "message", role: "assistant", content: [{ type: "output_text", text: "Ada." }] };
const question = (id: string) => ({ id, type: "message", role: "user", content: [{ type: "input_text", text: "And then?" }] });

function response(id: string, contextItems: unknown[], inputItems: unknown[], expiresAt = 2000): StoredResponse {
  return { id, accountId: "acct", model: "m", previousResponseId: null, contextItems, inputItems, response: { id, output: [] }, createdAt: 1000, expiresAt };
}

const blobBytes = () => db.prepare("SELECT COALESCE(SUM(length(data)), 0) FROM response_blobs").pluck().get() as number;
const rowBytes = (id: string) => db.prepare("SELECT length(context_items) + length(input_items) FROM responses WHERE id = ?").pluck().get(id) as number;

describe("stored responses' long strings", () => {
  it("are kept once for a conversation that stores its first turn again with every later one, and read back whole", () => {
    insertStoredResponse(db, response("resp_1", [], [fileTurn]));
    insertStoredResponse(db, response("resp_2", [fileTurn, reply], [question("msg_3")]));
    insertStoredResponse(db, response("resp_3", [fileTurn, reply, question("msg_3"), reply], [question("msg_4")]));
    expect(PASTED.length).toBeGreaterThanOrEqual(BLOB_MIN_CHARS);
    expect(blobBytes()).toBe(FILE.length + PASTED.length);
    for (const id of ["resp_1", "resp_2", "resp_3"]) expect(rowBytes(id)).toBeLessThan(2000);

    expect(findStoredResponse(db, "acct", "resp_1", 1500)!.inputItems).toEqual([fileTurn]);
    expect(findStoredResponse(db, "acct", "resp_3", 1500)!.contextItems).toEqual([fileTurn, reply, question("msg_3"), reply]);
    // An item found by its id (item_reference) has its strings back too.
    expect(findStoredItem(db, "acct", "msg_1", 1500)).toEqual(fileTurn);
    expect(findStoredItem(db, "acct", "msg_4", 1500)).toEqual(question("msg_4"));
  });

  it("leave with the last response that holds them, deleted or expired", () => {
    insertStoredResponse(db, response("resp_1", [], [fileTurn], 2000));
    insertStoredResponse(db, response("resp_2", [fileTurn, reply], [question("msg_3")], 3000));
    expect(deleteStoredResponse(db, "acct", "resp_1", 1500)).toBe(true);
    expect(blobBytes()).toBe(FILE.length + PASTED.length);
    expect(findStoredResponse(db, "acct", "resp_2", 1500)!.contextItems).toEqual([fileTurn, reply]);
    expect(purgeExpiredResponses(db, 3000)).toBe(1);
    expect(blobBytes()).toBe(0);
    expect(db.prepare("SELECT COUNT(*) FROM response_blob_refs").pluck().get()).toBe(0);
  });

  it("are put back where they were, whatever else an item holds (a string that only looks like a place holder stays itself)", () => {
    const odd = { id: "msg_9", type: "function_call_output", call_id: "c", output: "" };
    const nested = {
      id: "msg_8",
      type: "message",
      role: "user",
      content: [
        { type: "input_text", text: "short" },
        { type: "input_image", image_url: FILE },
      ],
    };
    insertStoredResponse(db, response("resp_1", [odd], [nested, odd]));
    const stored = findStoredResponse(db, "acct", "resp_1", 1500)!;
    expect(stored.contextItems).toEqual([odd]);
    expect(stored.inputItems).toEqual([nested, odd]);
  });
});
