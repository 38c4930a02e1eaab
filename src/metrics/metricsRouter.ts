import { Router, type Request, type Response } from "express";
import type { AppDeps } from "../appDeps.js";
import { requireOperator } from "../auth/apiKeyAuth.js";
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

/** `GET /metrics` on the API port: the operator's API keys only (the optional metrics port serves it without auth). */
export type MetricsRouterDeps = Pick<AppDeps, "db" | "metrics" | "authenticateKey">;

export function metricsRouter(deps: MetricsRouterDeps): Router {
  const router = Router();
  const operatorOnly = requireOperator(deps.db);
  router.get("/metrics", deps.authenticateKey, operatorOnly, metricsHandler(deps.metrics));
  return router;
}
