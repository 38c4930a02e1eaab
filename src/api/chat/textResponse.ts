import type { Response } from "express";
import type { AppDeps } from "../../app.js";
import { balanceHeaders } from "../../billing/balanceHeaders.js";
import { costHeaders } from "../../billing/costHeaders.js";
import type { Cost } from "../../billing/credits.js";
import { RequestMeter } from "../../billing/RequestMeter.js";
import type { ModelEntry } from "../../config/modelRegistry.js";
import type { ChatGenerateResult } from "../../engines/types.js";
import { toErrorResponse } from "../../errors.js";
import { SseStream } from "../../http/sse.js";
import type { TokenReservation } from "../../limits/RateLimiter.js";
import { recordRequestUsage } from "../../store/usage.js";
import { setModelHeaders } from "../../http/modelHeaders.js";

/** Status recorded for requests whose client went away before the response ended (nginx's convention). */
const CLIENT_CLOSED_REQUEST = 499;

/**
 * What the text routes (chat completions and the legacy completions) give their service's
 * `prepare`: the rate-limit check, the TPM reservation made once the prompt is measured (before
 * the engine starts, so nothing of the response is sent yet), and a meter per model.
 */
export class TextAdmission {
  private tokens: TokenReservation | undefined;

  constructor(
    private readonly deps: AppDeps,
    private readonly res: Response,
  ) {}

  readonly admit = (entry: ModelEntry): void => {
    this.res.set(this.deps.limits.admit(this.res.locals.ctx, entry, "chat"));
  };

  readonly reserveTokens = (entry: ModelEntry, count: number): void => {
    this.tokens?.settle(0);
    this.tokens = this.deps.limits.reserveTokens(this.res.locals.ctx, entry, "chat", count);
    if (this.tokens && !this.res.headersSent) this.res.set(this.tokens.headers);
  };

  readonly meterFor = (entry: ModelEntry): RequestMeter => new RequestMeter(this.deps.credits, this.res.locals.ctx, entry.id);

  /** Exactly once: the reservation becomes what was used (nothing when the request failed). */
  settleTokens(entry: ModelEntry, used: number): void {
    if (this.tokens) this.tokens.settle(used);
    else this.deps.limits.recordTokens(this.res.locals.ctx, entry, used);
    this.tokens = undefined;
  }
}

/** What both text services prepare: the model, its lease and meter, and headers of their own. */
export interface PreparedText {
  entry: ModelEntry;
  engine: { router: string };
  lease: { release(): void };
  meter: RequestMeter;
  headers: Record<string, string>;
}

/**
 * Sends a prepared text generation, streamed (SSE, an error after the first byte goes into the
 * stream) or whole (with its cost headers), and in one `finally` releases the model, the hold
 * and the token reservation and writes the usage row, whatever happened.
 */
export async function sendTextResponse<R extends ChatGenerateResult>(
  deps: AppDeps,
  res: Response,
  call: {
    endpoint: string;
    prepared: PreparedText;
    admission: TextAdmission;
    stream: boolean;
    chunks: () => AsyncGenerator<unknown, R | undefined, void>;
    complete: () => Promise<{ response: { cost: Cost }; result: R }>;
  },
): Promise<void> {
  const { prepared, admission } = call;
  const ctx = res.locals.ctx;
  try {
    setModelHeaders(res, prepared.entry, prepared.engine.router);
    res.set(prepared.headers);
    if (ctx.auth) res.set(balanceHeaders(deps.credits.snapshot(ctx.auth.accountId)));
  } catch (error) {
    prepared.lease.release();
    throw error;
  }

  let result: R | undefined;
  let status = 200;
  try {
    if (call.stream) {
      const sse = new SseStream(res);
      const chunks = call.chunks();
      try {
        for (let next = await chunks.next(); ; next = await chunks.next()) {
          if (next.done) {
            result = next.value;
            break;
          }
          sse.send(next.value);
        }
        sse.end();
      } catch (error) {
        if (!sse.started) throw error;
        status = toErrorResponse(error).status;
        sse.fail(error);
      }
      if (result?.finishReason === "abort") status = CLIENT_CLOSED_REQUEST;
    } else {
      const completion = await call.complete();
      result = completion.result;
      if (result.finishReason === "abort") status = CLIENT_CLOSED_REQUEST;
      else res.set(costHeaders(completion.response.cost)).json(completion.response);
    }
  } catch (error) {
    status = toErrorResponse(error).status;
    throw error;
  } finally {
    prepared.lease.release();
    // Releases the hold when the request failed before the service settled it.
    prepared.meter.settle([]);
    admission.settleTokens(prepared.entry, (result?.promptTokens ?? 0) + (result?.completionTokens ?? 0));
    recordRequestUsage(deps.db, ctx, {
      endpoint: call.endpoint,
      model: prepared.entry.id,
      promptTokens: result?.promptTokens ?? 0,
      completionTokens: result?.completionTokens ?? 0,
      cachedTokens: result?.cachedTokens ?? 0,
      status,
      finishReason: result?.finishReason ?? null,
    });
  }
}
