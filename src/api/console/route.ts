import { Router, type Response } from "express";
import type { AppDeps } from "../../appDeps.js";
import { requireOperator } from "../../auth/apiKeyAuth.js";
import { parse, requireJson } from "../../http/parse.js";
import { AdminAccountsQuery, AdminUsageQuery, GrantCreditsRequest } from "./schema.js";
import { ConsoleService } from "./service.js";

const callerOf = (res: Response) => res.locals.ctx.auth!;

/** The web console's node-wide endpoints: the operator's keys only (an account admin manages its own account through /api_keys). */
export type ConsoleRouterDeps = Pick<AppDeps, "db" | "credits" | "now" | "authenticateKey" | "jsonBody">;

export function consoleRouter(deps: ConsoleRouterDeps): Router {
  const service = new ConsoleService({ db: deps.db, credits: deps.credits, now: deps.now });
  const router = Router();
  const operatorOnly = requireOperator(deps.db);

  router.get("/admin/accounts", deps.authenticateKey, operatorOnly, (req, res) => {
    const { limit } = parse(AdminAccountsQuery, req.query);
    res.json(service.accounts(limit));
  });

  router.post("/admin/accounts/:id/credits", deps.authenticateKey, operatorOnly, deps.jsonBody, (req, res) => {
    requireJson(req);
    const body = parse(GrantCreditsRequest, req.body);
    const caller = callerOf(res);
    const data = service.grant(String(req.params.id), body, caller.kind === "apiKey" ? caller.apiKeyId : "unknown");
    res.locals.ctx.log.info({ account: data.id, currency: body.currency, amount: body.amount, grantedBy: caller.apiKeyId }, "credit granted");
    res.json({ success: true, data });
  });

  router.get("/admin/usage", deps.authenticateKey, operatorOnly, (req, res) => {
    const { days } = parse(AdminUsageQuery, req.query);
    res.json(service.usage(days));
  });

  return router;
}
