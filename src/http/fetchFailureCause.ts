/**
 * Why a `fetch` failed, in a few words: Node wraps the socket error ("fetch failed"), so the
 * real cause (ECONNREFUSED, ENOTFOUND, "bad port") is on `cause`.
 */
export function fetchFailureCause(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message ?? String(error);
}
