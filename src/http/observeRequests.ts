import type { NextFunction, Request, Response } from "express";
import { UNMATCHED_ROUTE, type Metrics } from "../metrics/Metrics.js";
import { CLIENT_CLOSED_REQUEST } from "./clientClosedRequest.js";

/**
 * After requestContext: one access-log line per request (at info, through the request's own
 * logger) and the request metrics, when the response is over. Routes are reported as their
 * Express pattern (`/api/v1/models/:id`), never the raw URL, so ids and queries stay out of labels
 * and logs. While it runs, the request is an activity a stall report names (Metrics.beginActivity).
 */
export function observeRequests(metrics: Metrics) {
  return (req: Request, res: Response, next: NextFunction) => {
    const started = performance.now();
    const route = captureRoute(req);
    const endActivity = metrics.beginActivity("request", () => {
      const ctx = res.locals.ctx;
      return {
        method: req.method,
        route: route() ?? "(not routed yet)",
        requestId: ctx.requestId,
        // The client's own X-Request-Id, so a stall can be matched with the client's logs.
        clientRequestId: ctx.clientRequestId === ctx.requestId ? undefined : ctx.clientRequestId,
        keyId: ctx.auth?.apiKeyId ?? undefined,
      };
    });
    res.once("close", () => {
      endActivity();
      const ctx = res.locals.ctx;
      const status = res.writableFinished ? res.statusCode : CLIENT_CLOSED_REQUEST;
      const seconds = (performance.now() - started) / 1000;
      const pattern = route() ?? UNMATCHED_ROUTE;
      metrics.request(req.method, pattern, status, seconds);
      const model = res.getHeader("x-service-model-id");
      const auth = ctx.auth;
      ctx.log.info(
        {
          method: req.method,
          route: pattern,
          status,
          durationMs: Math.round(seconds * 1e4) / 10,
          ...(typeof model === "string" ? { model } : {}),
          ...(auth?.kind === "apiKey" ? { keyId: auth.apiKeyId } : {}),
          ...(auth?.kind === "wallet" ? { wallet: auth.wallet.address } : {}),
        },
        "request",
      );
    });
    next();
  };
}

/**
 * The full pattern of the last route that matched. Express sets `req.route` (the pattern within
 * its router) while `req.baseUrl` still holds the router's mount path; by the time an error
 * reaches the app's handler the mount path has been restored away, so both are read at that
 * moment.
 */
function captureRoute(req: Request): () => string | undefined {
  let route: unknown;
  let full: string | undefined;
  Object.defineProperty(req, "route", {
    configurable: true,
    enumerable: true,
    get: () => route,
    set: (value: { path?: unknown } | undefined) => {
      route = value;
      if (value && typeof value.path === "string") full = `${req.baseUrl}${value.path}`;
    },
  });
  return () => full;
}
