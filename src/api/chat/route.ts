import { Router, type Response } from "express";
import type { ModelEntry } from "../../config.js";
import type { ChatGenerateResult } from "../../engines/types.js";
import { toErrorResponse } from "../../errors.js";
import { parse, requireJson } from "../../http/parse.js";
import { SseStream } from "../../http/sse.js";
import { recordRequestUsage } from "../../store/usage.js";
import type { AppDeps } from "../../app.js";
import { balanceHeaders } from "../../billing/balanceHeaders.js";
import { costHeaders } from "../../billing/costHeaders.js";
import { RequestMeter } from "../../billing/RequestMeter.js";
import type { TokenReservation } from "../../limits/RateLimiter.js";
import { ChatCompletionRequest } from "./schema.js";
import { ChatService } from "./service.js";
import { WebAugmenter } from "./webSearch.js";

/** Status recorded for requests whose client went away before the response ended (nginx's convention). */
const CLIENT_CLOSED_REQUEST = 499;

export function setModelHeaders(res: Response, entry: ModelEntry, router: string): void {
  res.setHeader("x-service-model-id", entry.id);
  res.setHeader("x-service-model-name", entry.name ?? entry.id);
  res.setHeader("x-service-model-router", router);
  if (entry.deprecation) {
    res.setHeader("x-service-model-deprecation-warning", entry.deprecation.warning);
    res.setHeader("x-service-model-deprecation-date", entry.deprecation.date);
  }
}

export function chatRouter(deps: AppDeps): Router {
  const service = new ChatService(
    deps.models,
    deps.characters,
    deps.config.requestTimeoutMs,
    WebAugmenter.fromConfig(deps.config, deps.logger),
    { maxFileBytes: Math.round(deps.config.maxUploadMb * 1e6), maxFileChars: deps.config.maxFileChars, requestTimeoutMs: deps.config.requestTimeoutMs },
    deps.metrics,
  );
  const router = Router();
  router.post("/chat/completions", deps.authenticate, deps.jsonBody, async (req, res) => {
    requireJson(req);
    const body = parse(ChatCompletionRequest, req.body);
    const ctx = res.locals.ctx;
    let tokens: TokenReservation | undefined;
    const chat = await service.prepare(body, {
      requestId: ctx.requestId,
      meterFor: (entry) => new RequestMeter(deps.credits, ctx, entry.id),
      admit: (entry) => res.set(deps.limits.admit(ctx, entry, "chat")),
      // Runs before the engine starts, so nothing of the response is sent yet.
      reserveTokens: (entry, count) => {
        tokens?.settle(0);
        tokens = undefined;
        tokens = deps.limits.reserveTokens(ctx, entry, "chat", count);
        if (tokens && !res.headersSent) res.set(tokens.headers);
      },
      signal: ctx.abort.signal,
    });
    try {
      setModelHeaders(res, chat.entry, chat.engine.router);
      res.set(chat.headers);
      if (ctx.auth) res.set(balanceHeaders(deps.credits.snapshot(ctx.auth.accountId)));
    } catch (error) {
      chat.lease.release();
      throw error;
    }

    let result: ChatGenerateResult | undefined;
    let status = 200;
    try {
      if (body.stream) {
        const sse = new SseStream(res);
        const chunks = service.stream(chat, ctx.abort.signal);
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
        const completion = await service.complete(chat, ctx.abort.signal);
        result = completion.result;
        if (result.finishReason === "abort") status = CLIENT_CLOSED_REQUEST;
        else res.set(costHeaders(completion.response.cost)).json(completion.response);
      }
    } catch (error) {
      status = toErrorResponse(error).status;
      throw error;
    } finally {
      chat.lease.release();
      // Releases the hold when the request failed before the service settled it.
      chat.meter.settle([]);
      // Exactly once: the reservation becomes what was used (nothing when the request failed).
      const used = (result?.promptTokens ?? 0) + (result?.completionTokens ?? 0);
      if (tokens) tokens.settle(used);
      else deps.limits.recordTokens(ctx, chat.entry, used);
      recordRequestUsage(deps.db, ctx, {
        endpoint: "/chat/completions",
        model: chat.entry.id,
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
