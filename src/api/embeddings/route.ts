import { Router } from "express";
import type { AppDeps } from "../../appDeps.js";
import { costHeaders } from "../../billing/costHeaders.js";
import { embeddingCost } from "../../billing/pricing.js";
import { InvalidRequestError } from "../../errors.js";
import { metered } from "../../http/meteredRequest.js";
import { parse, requireJson } from "../../http/parse.js";
import { CreateEmbeddingRequest, type CreateEmbeddingResponse, isTokenArrayInput } from "./schema.js";
import { EmbeddingService } from "./service.js";

export type EmbeddingsRouterDeps = Pick<AppDeps, "models" | "credits" | "limits" | "db" | "authenticate" | "jsonBody">;

export function embeddingsRouter(deps: EmbeddingsRouterDeps): Router {
  const service = new EmbeddingService(deps.models);
  const router = Router();
  router.post("/embeddings", deps.authenticate, deps.jsonBody, (req, res) =>
    metered(deps, res, { endpoint: "/embeddings" }, async (paid) => {
      requireJson(req);
      if (isTokenArrayInput((req.body as { input?: unknown } | undefined)?.input)) {
        throw InvalidRequestError.forField(
          ["input"],
          "token arrays are not supported: send a string or an array of strings (LangChain's OpenAIEmbeddings sends token arrays unless check_embedding_ctx_length=False)",
        );
      }
      const body = parse(CreateEmbeddingRequest, req.body);
      const entry = service.entry(body);
      paid.admit(entry, "embedding");
      paid.record(entry.id);
      const meter = paid.meterFor(entry.id);
      const prepared = await service.prepare(entry, body);
      paid.hold(prepared.lease);
      paid.serve(entry, prepared.engine.router);
      // Token counts are exact before inference (a relay's are bounds), so the hold is the charge (at most).
      const bound = prepared.tokens.reduce((a, b) => a + b, 0);
      meter.reserve(embeddingCost(entry, bound));
      const response = await service.embed(prepared, body, paid.signal);
      const tokens = response.usage.prompt_tokens;
      const cost = meter.settle(embeddingCost(entry, tokens));
      paid.usage = { promptTokens: tokens };
      res.set(costHeaders(cost)).json({ ...response, cost } satisfies CreateEmbeddingResponse);
    }),
  );
  return router;
}
