import { Router, type Response } from "express";
import type { AppDeps } from "../../app.js";
import { requireAdmin } from "../../auth/apiKeyAuth.js";
import { parse, requireJson } from "../../http/parse.js";
import { AdminAccountsQuery, AdminUsageQuery, GrantCreditsRequest } from "./schema.js";
import { ConsoleService } from "./service.js";

const callerOf = (res: Response) => res.locals.ctx.auth!;

/** The web console's admin endpoints (node-wide: any admin key sees every account). */
export function consoleRouter(deps: AppDeps): Router {
  const service = new ConsoleService({ db: deps.db, credits: deps.credits, now: deps.now });
  const router = Router();

  router.get("/admin/accounts", deps.authenticateKey, requireAdmin, (req, res) => {
    const { limit } = parse(AdminAccountsQuery, req.query);
    res.json(service.accounts(limit));
  });

  router.post("/admin/accounts/:id/credits", deps.authenticateKey, requireAdmin, deps.jsonBody, (req, res) => {
    requireJson(req);
    const body = parse(GrantCreditsRequest, req.body);
    res.json({ success: true, data: service.grant(String(req.params.id), body, callerOf(res).apiKeyId ?? "unknown") });
  });

  router.get("/admin/usage", deps.authenticateKey, requireAdmin, (req, res) => {
    const { days } = parse(AdminUsageQuery, req.query);
    res.json(service.usage(days));
  });

  return router;
}
