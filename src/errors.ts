import { z } from "zod";

/**
 * Domain errors carry their HTTP status; one mapper turns any thrown value into the
 * reference's standard `{error}` or detailed `{error, details}` body.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly extra: { code?: string; details?: unknown; headers?: Record<string, string>; body?: Record<string, unknown> } = {},
  ) {
    super(message);
    this.name = new.target.name;
  }
}

export class InvalidRequestError extends ApiError {
  constructor(message: string, details?: unknown) {
    super(400, message, { details: details ?? {} });
  }
  /** A 400 for one field, in the detailed shape a zod failure would have produced. */
  static forField(path: readonly (string | number)[], message: string): InvalidRequestError {
    const details: Record<string, unknown> = { _errors: [] };
    let node = details;
    for (const key of path) {
      const child: Record<string, unknown> = { _errors: [] };
      node[String(key)] = child;
      node = child;
    }
    (node._errors as string[]).push(message);
    return new InvalidRequestError(`${path.join(".")}: ${message}`, details);
  }
}

export class ValidationError extends InvalidRequestError {
  constructor(error: z.ZodError) {
    const first = error.issues[0];
    const where = first?.path.length ? `${first.path.join(".")}: ` : "";
    super(`Invalid request parameters: ${where}${first?.message ?? "invalid input"}`, z.formatError(error));
  }
}

export class AuthenticationError extends ApiError {
  constructor(message = "Authentication failed") {
    super(401, message);
  }
}
export class PermissionDeniedError extends ApiError {
  constructor(message: string) {
    super(403, message);
  }
}
/** 402 for API-key callers whose balance (or key limit) cannot cover a request. */
export class PaymentRequiredError extends ApiError {
  constructor(message: string) {
    super(402, message, { code: "INSUFFICIENT_BALANCE" });
  }
}
/** 402 with a body of its own: the x402 discovery answer and the signed-in wallet's top-up instructions. */
export class X402PaymentRequiredError extends ApiError {
  constructor(body: Record<string, unknown>, headers: Record<string, string>) {
    super(402, typeof body.error === "string" ? body.error : "Payment required", { body, headers });
  }
}
/** 401 for a SIGN-IN-WITH-X header that is malformed, forged, for another node or chain, expired or replayed. */
export class WalletSignInError extends ApiError {
  constructor(reason: string, detail: string) {
    super(401, `Invalid Sign-in-with-x signature: ${detail}`, { code: "X402_INVALID_SIGN_IN", body: { reason } });
  }
}
/** 403: the signed-in wallet asked about another wallet. */
export class WalletMismatchError extends ApiError {
  constructor() {
    super(403, "The signed-in wallet does not match the requested wallet", { code: "X402_WALLET_MISMATCH" });
  }
}
/**
 * Top-up failures in the reference's x402 shape: `{ error: <CODE>, message, details: { reason } }`
 * (400 X402_INVALID_PAYMENT for a payment that does not verify; PAYMENT_VERIFICATION_FAILED
 * when the transfer fails on chain).
 */
export class X402Error extends ApiError {
  constructor(status: number, code: string, message: string, reason?: string, extraDetails: Record<string, unknown> = {}) {
    super(status, message, { body: { error: code, message, ...(reason ? { details: { reason, ...extraDetails } } : {}) } });
  }
}
export class RateLimitError extends ApiError {
  constructor(message: string, headers: Record<string, string> = {}) {
    super(429, message, { headers });
  }
}
export class NotFoundError extends ApiError {
  constructor(message: string) {
    super(404, message);
  }
}
/** Model types as a message names them, with their article. */
const MODEL_TYPE_NAMES: Record<string, string> = { asr: "an ASR", tts: "a TTS", image: "an image", embedding: "an embedding", inpaint: "an inpaint", upscale: "an upscale" };
export class ModelNotFoundError extends NotFoundError {
  constructor(modelId: string, type?: string) {
    super(`The model "${modelId}" does not exist${type ? ` as ${MODEL_TYPE_NAMES[type] ?? `a ${type}`} model` : ""}. GET /models lists the models this node serves.`);
  }
}
export class UnsupportedMediaTypeError extends ApiError {
  constructor(expected: string) {
    super(415, `Invalid request content-type: expected ${expected}`);
  }
}
export class InferenceError extends ApiError {
  constructor(message = "Inference processing failed") {
    super(500, message);
  }
}
export class ModelAtCapacityError extends ApiError {
  constructor(modelId: string) {
    super(503, `The model "${modelId}" is at capacity. Please try again later.`);
  }
}
export class ModelUnavailableError extends ApiError {
  constructor(
    readonly modelId: string,
    readonly causeText: string,
  ) {
    super(503, `The model "${modelId}" could not be loaded: ${causeText}`);
  }
}
/** 409: an operation on a model that its current state forbids (unloading it while requests use it). */
export class ModelBusyError extends ApiError {
  constructor(message: string) {
    super(409, message, { code: "MODEL_BUSY" });
  }
}
export class RequestTimeoutError extends ApiError {
  constructor() {
    super(504, "The request took too long to complete and was timed-out. For long-running inference requests, use stream=true.");
  }
}

/**
 * The reference's standard error body: `error` says what went wrong, `code` is set where the
 * brief names one (INSUFFICIENT_BALANCE, PAYLOAD_TOO_LARGE, X402_*). Some errors add fields of
 * their own (the x402 shapes), so unknown fields are allowed.
 */
export const ErrorResponse = z.looseObject({
  error: z.string(),
  code: z.string().optional(),
  details: z.unknown().optional(),
});
export type ErrorBody = z.infer<typeof ErrorResponse>;

/** The detailed 400: `details` is zod's format() tree, `_errors` at each level, naming the offending field. */
export const DetailedErrorResponse = z.looseObject({
  error: z.string(),
  details: z.record(z.string(), z.unknown()),
});

/** The most characters of one offending value an error message quotes; longer runs end in "…". */
export const QUOTE_LIMIT = 100;
/** The most characters one error message or `details` entry has, whatever it quotes. */
export const MESSAGE_LIMIT = 1000;

/**
 * An error text as sent: every run of non-space characters longer than QUOTE_LIMIT (an id, a
 * slug, a pasted value) is cut to its prefix and "…", and the whole to MESSAGE_LIMIT, so an
 * error never echoes a large input back.
 */
export function clipMessage(text: string): string {
  if (text.length <= QUOTE_LIMIT) return text;
  // Run by run, from one whitespace character to the next, stopping once past the cap. (A
  // regular expression matching the runs themselves overflows V8's stack on a run of megabytes:
  // a 10 MB key quoted in an error's path was a 500.)
  let clipped = "";
  let at = 0;
  while (at < text.length && clipped.length <= MESSAGE_LIMIT) {
    WHITESPACE.lastIndex = at;
    const space = WHITESPACE.exec(text);
    const end = space ? space.index : text.length;
    clipped += end - at > QUOTE_LIMIT ? `${text.slice(at, at + QUOTE_LIMIT)}…` : text.slice(at, end);
    if (space) clipped += space[0];
    at = end + 1;
  }
  return clipped.length > MESSAGE_LIMIT ? `${clipped.slice(0, MESSAGE_LIMIT)}…` : clipped;
}
const WHITESPACE = /\s/g;

/**
 * `details` as sent: strings clipped, keys clipped, at most MAX_DETAIL_NODES entries, walked
 * without recursion (a detail tree mirrors the request, whose keys and nesting the caller chose).
 */
const MAX_DETAIL_NODES = 200;
export function clipDetails(details: unknown): unknown {
  if (details === null || typeof details !== "object") return typeof details === "string" ? clipMessage(details) : details;
  const root: Record<string, unknown> | unknown[] = Array.isArray(details) ? [] : {};
  const stack: { from: object; to: Record<string, unknown> | unknown[] }[] = [{ from: details, to: root }];
  let budget = MAX_DETAIL_NODES;
  while (stack.length > 0) {
    const { from, to } = stack.pop()!;
    for (const [key, value] of Object.entries(from)) {
      if (budget-- <= 0) return root;
      let copy: unknown = value;
      if (typeof value === "string") copy = clipMessage(value);
      else if (value !== null && typeof value === "object") {
        copy = Array.isArray(value) ? [] : {};
        stack.push({ from: value, to: copy as Record<string, unknown> });
      }
      if (Array.isArray(to)) to.push(copy);
      else to[clipMessage(key)] = copy;
    }
  }
  return root;
}

/** Maps anything thrown to a status and a body of the reference's shape. Unknown errors are 500s with a generic message. */
export function toErrorResponse(error: unknown): { status: number; body: ErrorBody; headers: Record<string, string> } {
  const { status, body, headers } = toUnclippedErrorResponse(error);
  if (typeof body.error === "string") body.error = clipMessage(body.error);
  if (typeof body.message === "string") body.message = clipMessage(body.message);
  if (body.details !== undefined) body.details = clipDetails(body.details);
  return { status, body, headers };
}

function toUnclippedErrorResponse(error: unknown): { status: number; body: ErrorBody; headers: Record<string, string> } {
  if (error instanceof ApiError) {
    // A body of its own (x402 shapes) may set `error` itself.
    const body: ErrorBody = { error: error.message, ...error.extra.body };
    if (error.extra.code) body.code = error.extra.code;
    if (error.extra.details !== undefined) body.details = error.extra.details;
    return { status: error.status, body, headers: error.extra.headers ?? {} };
  }
  if (error instanceof z.ZodError) return toUnclippedErrorResponse(new ValidationError(error));
  const httpError = error as { status?: number; type?: string; message?: string };
  // body-parser's errors: malformed JSON, oversized bodies, bad charsets.
  if (httpError?.type === "entity.parse.failed") {
    return toUnclippedErrorResponse(new InvalidRequestError(`Malformed JSON in request body: ${httpError.message}`));
  }
  if (httpError?.type === "entity.too.large") {
    return { status: 413, body: { error: "Request body is too large", code: "PAYLOAD_TOO_LARGE" }, headers: {} };
  }
  if (typeof httpError?.status === "number" && httpError.status >= 400 && httpError.status < 500) {
    return { status: httpError.status, body: { error: httpError.message ?? "Bad request" }, headers: {} };
  }
  return { status: 500, body: { error: "Inference processing failed" }, headers: {} };
}

/** The upstream server a model is relayed to failed or refused the node (not the caller's fault). */
export class UpstreamError extends ApiError {
  constructor(message: string, status = 502) {
    super(status, message);
  }
}

/** The uploaded media could not be decoded (not audio, or a codec ffmpeg lacks). */
export class UndecodableMediaError extends ApiError {
  constructor(what: string) {
    super(415, `Could not decode ${what}: upload audio in a format ffmpeg reads (wav, mp3, flac, ogg, m4a, webm, aac...)`);
  }
}

/** 413 in the reference's PayloadTooLargeError shape. */
export class PayloadTooLargeError extends ApiError {
  constructor(message: string) {
    super(413, message, { code: "PAYLOAD_TOO_LARGE" });
  }
}
