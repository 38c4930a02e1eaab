import { Router } from "express";
import type { AppDeps } from "../../app.js";
import { parse, requireJson } from "../../http/parse.js";
import { sendTextResponse, TextAdmission } from "../chat/textResponse.js";
import { CompletionRequest } from "./schema.js";
import { CompletionService } from "./service.js";

/** POST /completions: legacy text completions on the chat models, billed and limited as chat is. */
export function completionsRouter(deps: AppDeps): Router {
  const service = new CompletionService(deps.models, deps.config.requestTimeoutMs, deps.metrics);
  const router = Router();
  router.post("/completions", deps.authenticate, deps.jsonBody, async (req, res) => {
    requireJson(req);
    const body = parse(CompletionRequest, req.body);
    const ctx = res.locals.ctx;
    const admission = new TextAdmission(deps, res);
    const prepared = await service.prepare(body, {
      requestId: ctx.requestId,
      meterFor: admission.meterFor,
      admit: admission.admit,
      reserveTokens: admission.reserveTokens,
    });
    await sendTextResponse(deps, res, {
      endpoint: "/completions",
      prepared,
      admission,
      stream: body.stream === true,
      chunks: () => service.stream(prepared, ctx.abort.signal),
      complete: () => service.complete(prepared, ctx.abort.signal),
    });
  });
  return router;
}
