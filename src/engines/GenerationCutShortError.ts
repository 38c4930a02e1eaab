import { UpstreamError } from "../errors.js";
import type { ChatGenerateResult } from "./types.js";

/**
 * A generation that failed after its first piece was passed on (a relayed stream whose upstream
 * died): `partial` is what was produced until then, so the caller can charge what the client got
 * before the stream ends with the error.
 */
export class GenerationCutShortError extends UpstreamError {
  constructor(
    message: string,
    status: number,
    readonly partial: ChatGenerateResult,
  ) {
    super(message, status);
  }
}
