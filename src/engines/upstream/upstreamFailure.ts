import { ApiError, InvalidRequestError, ModelAtCapacityError, PayloadTooLargeError, UpstreamError } from "../../errors.js";

/** The message of an error body in any of the usual shapes: Hearth's {error}, the standard's {error: {message}}, FastAPI's {detail}. */
export function upstreamErrorMessage(body: unknown): string | undefined {
  if (typeof body === "string") return body;
  if (typeof body !== "object" || body === null) return undefined;
  const record = body as { error?: unknown; message?: unknown; detail?: unknown };
  if (typeof record.message === "string") return record.message;
  if (record.error !== undefined) return upstreamErrorMessage(record.error);
  if (typeof record.detail === "string") return record.detail;
  return undefined;
}

/**
 * The caller's mistakes the upstream found (4xx) keep their status and message in Hearth's
 * error shape; the upstream refusing this node (401/402/403) or failing (5xx) is a 502, an
 * upstream at capacity (503) a 503, and one limiting this node's key (429) a 503 that says so.
 */
export async function upstreamFailure(response: Response, host: string, modelId: string): Promise<ApiError> {
  const text = await response.text().catch(() => "");
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON: the text itself.
  }
  const message = upstreamErrorMessage(body) || response.statusText || `HTTP ${response.status}`;
  const status = response.status;
  if (status === 401 || status === 402 || status === 403) return new UpstreamError(`The upstream chat server at ${host} refused this node (${status}: ${message})`);
  // A 429 is the upstream limiting this node's key, not a lack of capacity: said as such, so that
  // the operator of a gateway sees why (an ordinary key on a pool node holds the whole gateway to
  // one caller's limits).
  if (status === 429) return upstreamLimitingError(response, host, message);
  if (status === 503) return new ModelAtCapacityError(modelId);
  if (status >= 500 || status < 400) return new UpstreamError(`The upstream chat server at ${host} failed (${status}: ${message})`);
  const record = typeof body === "object" && body !== null ? (body as { details?: unknown; param?: unknown; error?: { param?: unknown } }) : {};
  if (status === 400 || status === 422) {
    // The standard's {error: {param}}; vLLM puts param beside message.
    const param = typeof record.error === "object" && record.error !== null ? record.error.param : record.param;
    const details = record.details ?? (typeof param === "string" && param ? InvalidRequestError.forField(param.split("."), message).extra.details : undefined);
    return new InvalidRequestError(`Upstream: ${message}`, details);
  }
  if (status === 413) return new PayloadTooLargeError(`Upstream: ${message}`);
  return new ApiError(status, `Upstream: ${message}`);
}

/**
 * An upstream's 429: it limits this node's key (a pool node holding a gateway to one caller's
 * limits), which is no lack of capacity. A 503 that names the upstream, its message and the
 * remedy, with its Retry-After.
 */
export function upstreamLimitingError(response: Response, host: string, message: string): ApiError {
  const retryAfter = response.headers.get("retry-after");
  return new ApiError(
    503,
    `The upstream server at ${host} is limiting this node's requests (429: ${message}). If it is a Hearth node behind this gateway, give the gateway a gateway key there (hearth keys create --gateway; docs/scaling.md).`,
    retryAfter ? { headers: { "retry-after": retryAfter } } : {},
  );
}
