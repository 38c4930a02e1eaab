import type { ErrorBody } from "../errors.js";

/**
 * The two error shapes a node can answer in (`--error-format`):
 * - `provider` (default): the reference API's `{"error": "<message>", "code"?, "details"?}`;
 * - `standard`: the chat-completions standard's `{"error": {"message", "type", "code", "param"}}`,
 *   which the official SDKs and the Vercel AI SDK read their error fields from.
 * x402 payment bodies (`x402Version`, `accepts`) keep their protocol shape in both: payment clients parse them.
 */
export type ErrorFormat = "provider" | "standard";

export interface StandardErrorBody {
  error: { message: string; type: string; code: string | null; param: string | null; details?: unknown };
}

/** The standard's error `type` for a status (the names its SDKs and servers use). */
export function standardErrorType(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 402) return "insufficient_quota";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 429) return "rate_limit_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

const DEFAULT_CODES: Record<number, string> = { 404: "not_found", 413: "payload_too_large", 429: "rate_limit_exceeded" };

/** The first field a detailed 400 names (its zod-style `_errors` tree), as a dotted path. */
export function firstErrorPath(details: unknown): string | null {
  // Breadth-first and iterative: a hostile body cannot make this recurse.
  const queue: { node: unknown; path: string[] }[] = [{ node: details, path: [] }];
  for (let visited = 0; queue.length > 0 && visited < 1000; visited++) {
    const { node, path } = queue.shift()!;
    if (typeof node !== "object" || node === null) continue;
    const record = node as Record<string, unknown>;
    if (path.length > 0 && Array.isArray(record._errors) && record._errors.length > 0) return path.join(".");
    for (const [key, child] of Object.entries(record)) if (key !== "_errors") queue.push({ node: child, path: [...path, key] });
  }
  return null;
}

export function formatErrorBody(format: ErrorFormat, status: number, body: ErrorBody): ErrorBody | StandardErrorBody {
  if (format === "provider" || "x402Version" in body) return body;
  // x402 failures put their code in `error` and the sentence in `message`.
  const message = typeof body.message === "string" ? body.message : body.error;
  const code = body.code ?? (typeof body.message === "string" ? body.error : DEFAULT_CODES[status]) ?? null;
  return {
    error: {
      message,
      type: standardErrorType(status),
      code,
      param: firstErrorPath(body.details),
      ...(body.details !== undefined ? { details: body.details } : {}),
    },
  };
}
