import { RequestTimeoutError } from "../errors.js";

/**
 * Runs `work` under one signal that aborts when the client goes away or when the request's
 * deadline passes; past the deadline (and not because the client left) it is a 504. The one
 * place the deadline pattern is written: every timed engine call goes through it.
 */
export async function withDeadline<T>(clientSignal: AbortSignal | undefined, timeoutMs: number, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = clientSignal ? AbortSignal.any([clientSignal, timeout]) : timeout;
  const timedOut = () => timeout.aborted && !clientSignal?.aborted;
  let result: T;
  try {
    result = await work(signal);
  } catch (error) {
    if (timedOut()) throw new RequestTimeoutError();
    throw error;
  }
  // An engine that stops at the signal returns what it had: still a timeout for the caller.
  if (timedOut()) throw new RequestTimeoutError();
  return result;
}
