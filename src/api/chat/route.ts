import { Router } from "express";
import type { AppDeps } from "../../appDeps.js";
import { metered } from "../../http/meteredRequest.js";
import { parse, requireJson } from "../../http/parse.js";
import { ChatCompletionRequest } from "./schema.js";
import { ChatService } from "./service.js";
import { sendTextResponse } from "./textResponse.js";

export type ChatRouterDeps = Pick<AppDeps, "config" | "logger" | "models" | "characters" | "metrics" | "credits" | "limits" | "db" | "authenticate" | "jsonBody">;

export function chatRouter(deps: ChatRouterDeps): Router {
  const service = ChatService.fromDeps(deps);
  const router = Router();
  router.post("/chat/completions", deps.authenticate, deps.jsonBody, (req, res) =>
    metered(deps, res, { endpoint: "/chat/completions" }, async (paid) => {
      requireJson(req);
      const body = parse(ChatCompletionRequest, req.body);
      const resolved = service.resolve(body);
      paid.attribute({ user: body.user, metadata: body.metadata });
      // Admitted once the model is known and before any paid or slow work (audio parts, pages,
      // search); the balance headers wait until audio parts are charged.
      paid.admit(resolved.entry, "chat", { showBalance: false });
      paid.countTokens(resolved.entry);
      const chat = await service.prepare(resolved, paid);
      await sendTextResponse(paid, chat, {
        stream: body.stream === true,
        chunks: () => service.stream(chat, paid.signal),
        complete: () => service.complete(chat, paid.signal),
      });
    }),
  );
  return router;
}
