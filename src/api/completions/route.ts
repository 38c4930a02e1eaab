import { Router } from "express";
import type { AppDeps } from "../../app.js";
import { balanceHeaders } from "../../billing/balanceHeaders.js";
import { RequestMeter } from "../../billing/RequestMeter.js";
import type { CompleteResult } from "../../engines/types.js";
import { toErrorResponse } from "../../errors.js";
import { parse, requireJson } from "../../http/parse.js";
import { SseStream } from "../../http/sse.js";
import type { TokenReservation } from "../../limits/RateLimiter.js";
import { recordRequestUsage } from "../../store/usage.js";
import { setModelHeaders } from "../chat/route.js";
import { CompletionRequest } from "./schema.js";
import { CompletionService } from "./service.js";

/** Status recorded for requests whose client went away before the response ended (nginx's convention). */
const CLIENT_CLOSED_REQUEST = 499;

/** POST /completions: legacy text completions on the chat models, billed and limited as chat is. */
export function completionsRouter(deps: AppDeps): Router {
  const service = new CompletionService(deps.models, deps.config.requestTimeoutMs, deps.metrics);
  const router = Router();
  router.post("/completions", deps.authenticate, deps.jsonBody, async (req, res) => {
    requireJson(req);
    const body = parse(CompletionRequest, req.body);
    const ctx = res.locals.ctx;
    let tokens: TokenReservation | undefined;
    const prepared = await service.prepare(body, {
      requestId: ctx.requestId,
      meterFor: (entry) => new RequestMeter(deps.credits, ctx, entry.id),
      admit: (entry) => res.set(deps.limits.admit(ctx, entry, "chat")),
      // Runs before the engine starts, so nothing of the response is sent yet.
      reserveTokens: (entry, count) => {
        tokens?.settle(0);
        tokens = deps.limits.reserveTokens(ctx, entry, "chat", count);
        if (tokens && !res.headersSent) res.set(tokens.headers);
      },
    });
    try {
      setModelHeaders(res, prepared.entry, prepared.engine.router);
      res.set(prepared.headers);
      if (ctx.auth) res.set(balanceHeaders(deps.credits.snapshot(ctx.auth.accountId)));
    } catch (error) {
      prepared.lease.release();
      throw error;
    }

    let result: CompleteResult | undefined;
    let status = 200;
    try {
      if (body.stream) {
        const sse = new SseStream(res);
        const chunks = service.stream(prepared, ctx.abort.signal);
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
        const completion = await service.complete(prepared, ctx.abort.signal);
        result = completion.result;
        if (result.finishReason === "abort") status = CLIENT_CLOSED_REQUEST;
        else res.json(completion.response);
      }
    } catch (error) {
      status = toErrorResponse(error).status;
      throw error;
    } finally {
      prepared.lease.release();
      // Releases the hold when the request failed before the service settled it.
      prepared.meter.settle([]);
      // Exactly once: the reservation becomes what was used (nothing when the request failed).
      const used = (result?.promptTokens ?? 0) + (result?.completionTokens ?? 0);
      if (tokens) tokens.settle(used);
      else deps.limits.recordTokens(ctx, prepared.entry, used);
      recordRequestUsage(deps.db, ctx, {
        endpoint: "/completions",
        model: prepared.entry.id,
        promptTokens: result?.promptTokens ?? 0,
        completionTokens: result?.completionTokens ?? 0,
        cachedTokens: result?.cachedTokens ?? 0,
        status,
        finishReason: result?.finishReason ?? null,
      });
    }
  });
  return router;
}
