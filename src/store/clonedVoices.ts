import { statement, type Db } from "./Store.js";

/** A cloned voice (vv_ handle): the style vector a speaker encoder derived from a reference sample. */
export interface ClonedVoice {
  id: string;
  accountId: string;
  modelId: string;
  name: string | null;
  embedding: Float32Array;
  /** File name of the reference sample inside the data directory's voices/ folder. */
  sampleFile: string;
  sampleFormat: string;
  sampleSeconds: number;
  createdAt: number;
  lastUsedAt: number;
  expiresAt: number;
}

interface Row {
  id: string;
  account_id: string;
  model_id: string;
  name: string | null;
  embedding: Buffer;
  sample_file: string;
  sample_format: string;
  sample_seconds: number;
  created_at: number;
  last_used_at: number;
  expires_at: number;
}

const toVoice = (row: Row): ClonedVoice => ({
  id: row.id,
  accountId: row.account_id,
  modelId: row.model_id,
  name: row.name,
  embedding: new Float32Array(row.embedding.buffer.slice(row.embedding.byteOffset, row.embedding.byteOffset + row.embedding.byteLength)),
  sampleFile: row.sample_file,
  sampleFormat: row.sample_format,
  sampleSeconds: row.sample_seconds,
  createdAt: row.created_at,
  lastUsedAt: row.last_used_at,
  expiresAt: row.expires_at,
});

export function insertClonedVoice(db: Db, voice: ClonedVoice): void {
  statement(
    db,
    `INSERT INTO cloned_voices (id, account_id, model_id, name, embedding, sample_file, sample_format, sample_seconds, created_at, last_used_at, expires_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    voice.id,
    voice.accountId,
    voice.modelId,
    voice.name,
    Buffer.from(voice.embedding.buffer, voice.embedding.byteOffset, voice.embedding.byteLength),
    voice.sampleFile,
    voice.sampleFormat,
    voice.sampleSeconds,
    voice.createdAt,
    voice.lastUsedAt,
    voice.expiresAt,
  );
}

/** The account's voice with this id, unless it expired (an expired one reads as absent). */
export function findClonedVoice(db: Db, accountId: string, id: string, now: number): ClonedVoice | undefined {
  const row = statement(db, "SELECT * FROM cloned_voices WHERE id = ? AND account_id = ? AND expires_at > ?").get(id, accountId, now) as Row | undefined;
  return row && toVoice(row);
}

export function listClonedVoices(db: Db, accountId: string, now: number): ClonedVoice[] {
  return (statement(db, "SELECT * FROM cloned_voices WHERE account_id = ? AND expires_at > ? ORDER BY created_at, id").all(accountId, now) as Row[]).map(toVoice);
}

/** A successful use keeps the handle alive for another retention window. */
export function touchClonedVoice(db: Db, id: string, now: number, retentionMs: number): void {
  statement(db, "UPDATE cloned_voices SET last_used_at = ?, expires_at = ? WHERE id = ?").run(now, now + retentionMs, id);
}

export function deleteClonedVoice(db: Db, accountId: string, id: string): ClonedVoice | undefined {
  const row = statement(db, "DELETE FROM cloned_voices WHERE id = ? AND account_id = ? RETURNING *").get(id, accountId) as Row | undefined;
  return row && toVoice(row);
}

/** Removes expired voices; returns them so their files can be deleted too. */
export function deleteExpiredClonedVoices(db: Db, now: number): ClonedVoice[] {
  return (statement(db, "DELETE FROM cloned_voices WHERE expires_at <= ? RETURNING *").all(now) as Row[]).map(toVoice);
}
