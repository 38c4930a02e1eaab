import { Router } from "express";
import type { AppDeps } from "../../app.js";
import { balanceHeaders } from "../../billing/balanceHeaders.js";
import { costHeaders } from "../../billing/costHeaders.js";
import { embeddingCost } from "../../billing/pricing.js";
import { RequestMeter } from "../../billing/RequestMeter.js";
import { InvalidRequestError, toErrorResponse } from "../../errors.js";
import { parse, requireJson } from "../../http/parse.js";
import { recordRequestUsage } from "../../store/usage.js";
import { setModelHeaders } from "../../http/modelHeaders.js";
import { CreateEmbeddingRequest, type CreateEmbeddingResponse, isTokenArrayInput } from "./schema.js";
import { EmbeddingService, type PreparedEmbedding } from "./service.js";

const CLIENT_CLOSED_REQUEST = 499;

export function embeddingsRouter(deps: AppDeps): Router {
  const service = new EmbeddingService(deps.models);
  const router = Router();
  router.post("/embeddings", deps.authenticate, deps.jsonBody, async (req, res) => {
    requireJson(req);
    if (isTokenArrayInput((req.body as { input?: unknown } | undefined)?.input)) {
      throw InvalidRequestError.forField(
        ["input"],
        "token arrays are not supported: send a string or an array of strings (LangChain's OpenAIEmbeddings sends token arrays unless check_embedding_ctx_length=False)",
      );
    }
    const body = parse(CreateEmbeddingRequest, req.body);
    const ctx = res.locals.ctx;
    const entry = service.entry(body);
    res.set(deps.limits.admit(ctx, entry, "embedding"));
    if (ctx.auth) res.set(balanceHeaders(deps.credits.snapshot(ctx.auth.accountId)));
    const meter = new RequestMeter(deps.credits, ctx, entry.id);
    let status = 200;
    let tokens = 0;
    let prepared: PreparedEmbedding | undefined;
    try {
      prepared = await service.prepare(entry, body);
      setModelHeaders(res, entry, prepared.engine.router);
      tokens = prepared.tokens.reduce((a, b) => a + b, 0);
      // Token counts are exact before inference, so the hold is the charge.
      meter.reserve(embeddingCost(entry, tokens));
      const response = await service.embed(prepared, body, ctx.abort.signal);
      const cost = meter.settle(embeddingCost(entry, tokens));
      res.set(costHeaders(cost)).json({ ...response, cost } satisfies CreateEmbeddingResponse);
    } catch (error) {
      status = ctx.abort.signal.aborted ? CLIENT_CLOSED_REQUEST : toErrorResponse(error).status;
      if (status !== CLIENT_CLOSED_REQUEST) throw error;
    } finally {
      prepared?.lease.release();
      meter.settle([]);
      recordRequestUsage(deps.db, ctx, {
        endpoint: "/embeddings",
        model: entry.id,
        promptTokens: status === 200 ? tokens : 0,
        status,
      });
    }
  });
  return router;
}
