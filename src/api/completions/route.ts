import { Router } from "express";
import type { AppDeps } from "../../appDeps.js";
import { metered } from "../../http/meteredRequest.js";
import { parse, requireJson } from "../../http/parse.js";
import { sendTextResponse } from "../chat/textResponse.js";
import { CompletionRequest } from "./schema.js";
import { CompletionService } from "./service.js";

export type CompletionsRouterDeps = Pick<AppDeps, "config" | "models" | "metrics" | "credits" | "limits" | "db" | "authenticate" | "jsonBody">;

/** POST /completions: legacy text completions on the chat models, billed and limited as chat is. */
export function completionsRouter(deps: CompletionsRouterDeps): Router {
  const service = new CompletionService(deps.models, deps.config.requestTimeoutMs, deps.metrics);
  const router = Router();
  router.post("/completions", deps.authenticate, deps.jsonBody, (req, res) =>
    metered(deps, res, { endpoint: "/completions" }, async (paid) => {
      requireJson(req);
      const body = parse(CompletionRequest, req.body);
      paid.attribute({ user: body.user });
      const entry = service.entry(body);
      // Admitted once the model is known and before it is loaded.
      paid.admit(entry, "chat", { showBalance: false });
      paid.countTokens(entry);
      const prepared = await service.prepare(entry, body, paid);
      await sendTextResponse(paid, prepared, {
        stream: body.stream === true,
        chunks: () => service.stream(prepared, paid.signal),
        complete: () => service.complete(prepared, paid.signal),
      });
    }),
  );
  return router;
}
