import { statement, type Db } from "./Store.js";
import { DAY_MS } from "../time.js";

export interface UsageRow {
  requestId: string;
  accountId: string | null;
  apiKeyId: string | null;
  endpoint: string;
  model: string | null;
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
  durationMs: number;
  status: number;
  finishReason: string | null;
  createdAt: number;
  /** Speech: characters synthesised. */
  characters?: number;
  /** Transcription: seconds of audio; speech: seconds produced. */
  audioSeconds?: number;
  /** The end user the request named (chat and responses `user`). */
  user?: string | null;
  /** The request's labels (chat and responses `metadata`), as JSON text. */
  metadata?: string | null;
}

export function recordUsage(db: Db, row: UsageRow): void {
  statement(
    db,
    `INSERT INTO usage (request_id, account_id, api_key_id, endpoint, model, prompt_tokens, completion_tokens, cached_tokens,
       duration_ms, status, finish_reason, created_at, characters, audio_seconds, user, metadata)
     VALUES (@requestId, @accountId, @apiKeyId, @endpoint, @model, @promptTokens, @completionTokens, @cachedTokens,
       @durationMs, @status, @finishReason, @createdAt, @characters, @audioSeconds, @user, @metadata)`,
  ).run({ characters: 0, audioSeconds: 0, user: null, metadata: null, ...row });
}

/** The request a usage row describes (a structural slice of the HTTP request context). */
export interface UsageSubject {
  requestId: string;
  startedAt: number;
  auth?: { accountId: string; apiKeyId: string | null };
}

/**
 * Records the usage row of one request: identity and timing come from the request; the
 * counts default to zero, as most endpoints measure only some of them.
 */
export function recordRequestUsage(
  db: Db,
  request: UsageSubject,
  row: Pick<UsageRow, "endpoint" | "model" | "status"> & Partial<Omit<UsageRow, "requestId" | "accountId" | "apiKeyId" | "durationMs">>,
  now = Date.now(),
): void {
  recordUsage(db, {
    requestId: request.requestId,
    accountId: request.auth?.accountId ?? null,
    apiKeyId: request.auth?.apiKeyId ?? null,
    promptTokens: 0,
    completionTokens: 0,
    cachedTokens: 0,
    finishReason: null,
    durationMs: now - request.startedAt,
    createdAt: now,
    ...row,
  });
}

export function listUsage(db: Db, accountId?: string): UsageRow[] {
  const select = `SELECT request_id AS requestId, account_id AS accountId, api_key_id AS apiKeyId, endpoint, model,
    prompt_tokens AS promptTokens, completion_tokens AS completionTokens, cached_tokens AS cachedTokens,
    duration_ms AS durationMs, status, finish_reason AS finishReason, created_at AS createdAt,
    characters, audio_seconds AS audioSeconds, user, metadata FROM usage`;
  return (accountId ? statement(db, `${select} WHERE account_id = ? ORDER BY id`).all(accountId) : statement(db, `${select} ORDER BY id`).all()) as UsageRow[];
}

// DAY_MS goes into the SQL as a literal, not a parameter: a bound JS number is a REAL, and the day must be an integer division.
/** Node-wide requests and tokens per UTC day and model since `since`; a null model is reported as `noModel`. */
export function dailyRequestsByModel(db: Db, since: number, noModel: string): { day: number; model: string; requests: number; tokens: number | null }[] {
  return statement(
    db,
    `SELECT (created_at / ${DAY_MS}) * ${DAY_MS} AS day, COALESCE(model, @noModel) AS model, COUNT(*) AS requests,
         SUM(prompt_tokens + completion_tokens) AS tokens
       FROM usage WHERE created_at >= @since GROUP BY day, model`,
  ).all({ noModel, since }) as { day: number; model: string; requests: number; tokens: number | null }[];
}
