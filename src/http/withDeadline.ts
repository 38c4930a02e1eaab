import { RequestTimeoutError } from "../errors.js";

/**
 * Runs `work` under one signal that aborts when the client goes away or when the request's
 * deadline passes; past the deadline (and not because the client left) it is a 504.
 */
export async function withDeadline<T>(clientSignal: AbortSignal, timeoutMs: number, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = AbortSignal.any([clientSignal, timeout]);
  let result: T;
  try {
    result = await work(signal);
  } catch (error) {
    if (timeout.aborted && !clientSignal.aborted) throw new RequestTimeoutError();
    throw error;
  }
  // An engine that stops at the signal returns what it had: still a timeout for the caller.
  if (timeout.aborted && !clientSignal.aborted) throw new RequestTimeoutError();
  return result;
}
