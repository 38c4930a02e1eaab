import { Router, type Request, type Response } from "express";
import type { AppDeps } from "../app.js";
import { requireAdmin } from "../auth/apiKeyAuth.js";
import type { Metrics } from "./Metrics.js";

/** Serves the Prometheus exposition text. */
export function metricsHandler(metrics: Metrics) {
  return async (_req: Request, res: Response) => {
    const body = await metrics.render();
    res.setHeader("content-type", metrics.contentType);
    res.setHeader("cache-control", "no-store");
    res.end(body);
  };
}

/** `GET /metrics` on the API port: admin API keys only (the optional metrics port serves it without auth). */
export function metricsRouter(deps: AppDeps): Router {
  const router = Router();
  router.get("/metrics", deps.authenticateKey, requireAdmin, metricsHandler(deps.metrics));
  return router;
}
