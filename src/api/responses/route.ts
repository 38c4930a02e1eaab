import { Router } from "express";
import type { AppDeps } from "../../appDeps.js";
import { metered } from "../../http/meteredRequest.js";
import { parse, requireJson } from "../../http/parse.js";
import { ChatService } from "../chat/service.js";
import { sendTextResponse } from "../chat/textResponse.js";
import { InputItemsQuery, ResponseIdParams, ResponseRequest } from "./schema.js";
import { ResponsesService } from "./service.js";

export type ResponsesRouterDeps = Pick<AppDeps, "config" | "logger" | "models" | "characters" | "metrics" | "credits" | "limits" | "db" | "now" | "authenticate" | "jsonBody">;

/**
 * POST /responses on the chat engines (billed, limited and recorded as chat is, usage endpoint
 * `/responses`), and this node's stored responses: GET and DELETE /responses/{id}, GET
 * /responses/{id}/input_items, each the caller's own only.
 */
export function responsesRouter(deps: ResponsesRouterDeps): Router {
  const chat = ChatService.fromDeps(deps);
  const service = new ResponsesService(chat, {
    db: deps.db,
    now: deps.now,
    retentionDays: deps.config.responsesRetentionDays,
    searchAvailable: deps.config.searchUrl !== undefined,
  });
  const router = Router();
  router.post("/responses", deps.authenticate, deps.jsonBody, (req, res) =>
    metered(deps, res, { endpoint: "/responses" }, async (paid) => {
      requireJson(req);
      const body = parse(ResponseRequest, req.body);
      const resolved = service.resolve(body, paid.ctx.auth!.accountId);
      paid.attribute({ user: resolved.chat.request.user, metadata: resolved.chat.request.metadata });
      // Admitted once the model is known and before any paid or slow work, as chat is.
      paid.admit(resolved.chat.entry, "chat", { showBalance: false });
      paid.countTokens(resolved.chat.entry);
      const response = await service.prepare(resolved, paid);
      const stream = body.stream === true;
      // The standard's framing: each event named by its type, no [DONE], a failure as response.failed.
      if (stream) paid.sse({ eventName: (event) => (event as { type?: string }).type, done: false, errorEvent: (error) => response.events.failed(error) });
      await sendTextResponse(paid, response.prepared, {
        stream,
        chunks: () => service.stream(response, paid.signal),
        complete: () => service.complete(response, paid.signal),
      });
    }),
  );
  router.get("/responses/:id", deps.authenticate, (req, res) => {
    res.set(deps.limits.admitAccount(res.locals.ctx));
    const { id } = parse(ResponseIdParams, req.params);
    res.json(service.retrieve(res.locals.ctx.auth!.accountId, id));
  });
  router.delete("/responses/:id", deps.authenticate, (req, res) => {
    res.set(deps.limits.admitAccount(res.locals.ctx));
    const { id } = parse(ResponseIdParams, req.params);
    res.json(service.delete(res.locals.ctx.auth!.accountId, id));
  });
  router.get("/responses/:id/input_items", deps.authenticate, (req, res) => {
    res.set(deps.limits.admitAccount(res.locals.ctx));
    const { id } = parse(ResponseIdParams, req.params);
    res.json(service.inputItems(res.locals.ctx.auth!.accountId, id, parse(InputItemsQuery, req.query)));
  });
  return router;
}
