import { Router } from "express";
import type { AppDeps } from "../../app.js";
import { parse, requireJson } from "../../http/parse.js";
import { ChatCompletionRequest } from "./schema.js";
import { ChatService } from "./service.js";
import { sendTextResponse, TextAdmission } from "./textResponse.js";
import { WebAugmenter } from "./webSearch.js";

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
    const admission = new TextAdmission(deps, res);
    const chat = await service.prepare(body, {
      requestId: ctx.requestId,
      meterFor: admission.meterFor,
      admit: admission.admit,
      reserveTokens: admission.reserveTokens,
      signal: ctx.abort.signal,
    });
    await sendTextResponse(deps, res, {
      endpoint: "/chat/completions",
      prepared: chat,
      admission,
      stream: body.stream === true,
      chunks: () => service.stream(chat, ctx.abort.signal),
      complete: () => service.complete(chat, ctx.abort.signal),
    });
  });
  return router;
}
