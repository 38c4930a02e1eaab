import express, { type Express, type NextFunction, type Request, type Response } from "express";
import type { AppDeps } from "./appDeps.js";
import { billingRouter } from "./api/billing/route.js";
import { adminRouter } from "./api/admin/route.js";
import { audioJobsRouter } from "./api/audio/jobsRoute.js";
import { audioRouter } from "./api/audio/route.js";
import { charactersRouter } from "./api/characters/route.js";
import { chatRouter } from "./api/chat/route.js";
import { completionsRouter } from "./api/completions/route.js";
import { responsesRouter } from "./api/responses/route.js";
import { consoleRouter } from "./api/console/route.js";
import { augmentRouter } from "./api/augment/route.js";
import { embeddingsRouter } from "./api/embeddings/route.js";
import { imagesRouter } from "./api/images/route.js";
import { keysRouter } from "./api/keys/route.js";
import { modelsRouter } from "./api/models/route.js";
import { docsRouter, openapiRouter } from "./api/openapi/route.js";
import { rpcRouter } from "./api/rpc/route.js";
import { backgroundRemoveRouter } from "./api/images/backgroundRemoveRoute.js";
import { upscaleRouter } from "./api/images/upscaleRoute.js";
import { videoRouter } from "./api/video/route.js";
import { x402Router } from "./api/x402/route.js";
import { consoleStatic } from "./console/consoleStatic.js";
import { createAuthenticators, walletPaymentError } from "./auth/walletAuth.js";
import { ApiError, NotFoundError, toErrorResponse } from "./errors.js";
import { largestBodyBytes, multipartBodyParser, routeBodyLimits } from "./http/bodyLimits.js";
import { BodyBudget, defaultBodyBudgetBytes } from "./http/bodyBudget.js";
import { compressResponses } from "./http/compressResponses.js";
import { formatErrorBody } from "./http/errorFormat.js";
import { jsonBodyByRoute } from "./http/jsonBody.js";
import { errorHostHeader, formatServiceVersion, requestContext } from "./http/requestContext.js";
import { AbuseGuard } from "./limits/abuseGuard.js";
import { withAccountLimit } from "./limits/accountCalls.js";
import type { Logger } from "./logger.js";
import { metricsRouter } from "./metrics/metricsRouter.js";
import { observeRequests } from "./http/observeRequests.js";
import { keyBySecretHash } from "./store/apiKeys.js";

export const API_BASE_PATH = "/api/v1";

// Routers take their dependencies from appDeps.ts (a types-only module), never from this file.
export type { AppDeps } from "./appDeps.js";

/** The routers under /api/v1; a new endpoint group is one line here. */
const ROUTERS = [
  modelsRouter,
  chatRouter,
  completionsRouter,
  responsesRouter,
  charactersRouter,
  audioRouter,
  audioJobsRouter,
  upscaleRouter,
  backgroundRemoveRouter,
  imagesRouter,
  embeddingsRouter,
  videoRouter,
  billingRouter,
  keysRouter,
  x402Router,
  rpcRouter,
  augmentRouter,
  consoleRouter,
  adminRouter,
  openapiRouter,
] as const;

export function createApp(deps: Omit<AppDeps, "authenticate" | "authenticateWallet" | "authenticateKey" | "jsonBody" | "multipartBody">): Express {
  const auth = createAuthenticators({
    db: deps.db,
    credits: deps.credits,
    siwx: deps.wallet.siwx,
    requirements: deps.wallet.requirements,
    minimumBalanceUsd: deps.config.wallet.x402.minimumBalanceUsd,
    now: deps.now,
  });
  // Every body parser admits bodies against one budget of bytes held at once, never less than
  // the largest body a route accepts (which must always be readable).
  const bodies = new BodyBudget(Math.max(largestBodyBytes(deps.config), deps.config.maxBodyInFlight ?? defaultBodyBudgetBytes()));
  const full: AppDeps = {
    ...deps,
    authenticate: auth.paid,
    // The wallet's own balance and transactions: the account window per wallet address (x-ratelimit-* headers).
    authenticateWallet: withAccountLimit(auth.walletSignIn, deps.limits),
    // Every endpoint behind a key alone is an account endpoint: admitted to the account window (x-ratelimit-* headers).
    authenticateKey: withAccountLimit(auth.apiKey, deps.limits),
    // Each route's own size limit (uploads only where a route takes files), and a nesting bound on every body.
    jsonBody: jsonBodyByRoute(routeBodyLimits(deps.config), bodies),
    multipartBody: multipartBodyParser(deps.config, bodies),
  };
  const app = express();
  app.disable("x-powered-by");
  app.set("query parser", "simple");
  app.use(requestContext(formatServiceVersion(new Date(deps.startedAt)), deps.logger, deps.config.errorFormat));
  app.use(bodies.contextHolds());
  app.use(servePlainV1AsAlias);
  app.use(observeRequests(deps.metrics));
  if (deps.requestLog) app.use(deps.requestLog.middleware(API_BASE_PATH));
  // Whole responses only: SSE and audio streams pass uncompressed (see compressResponses).
  app.use(compressResponses());
  const keyIdOf = (keyHash: string) => keyBySecretHash(deps.db, keyHash, deps.now())?.id;
  const abuse = new AbuseGuard({
    now: deps.now,
    keyStanding: (keyHash) => {
      const key = keyBySecretHash(deps.db, keyHash, deps.now());
      return key === undefined ? "unknown" : key.activeGateway ? "gateway" : "known";
    },
    onBlock: (subject, keyHash) => {
      const apiKeyId = keyHash ? (keyIdOf(keyHash) ?? null) : null;
      deps.limits.log(null, apiKeyId, null, "abuse", "FAILED_REQUESTS");
      deps.logger.warn({ subject: keyHash ? `key ${apiKeyId ?? "unknown"}` : subject }, "caller blocked for 30 s after repeated failures");
    },
  });
  app.locals.abuseGuard = abuse;
  app.locals.bodyBudget = bodies;
  app.use(abuse.middleware());
  for (const router of ROUTERS) app.use(API_BASE_PATH, router(full));
  app.use(metricsRouter(full));
  app.use(docsRouter());
  // The web console at /, after the API and /docs so it can never shadow them.
  app.use(consoleStatic(API_BASE_PATH));
  app.use((req, _res, next) => next(new NotFoundError(noRouteMessage(req.method, req.path))));
  app.use(errorHandler(deps.logger, walletPaymentError(deps.wallet.requirements, deps.credits)));
  return app;
}

/**
 * Many tools take a server's root and append `/v1` (the standard's own base path): `/v1/...` is
 * served as `/api/v1/...`, the same routes, keys and billing (the OpenAPI document names /api/v1 only).
 */
function servePlainV1AsAlias(req: Request, _res: Response, next: NextFunction): void {
  if (req.url === "/v1" || req.url.startsWith("/v1/") || req.url.startsWith("/v1?")) req.url = `/api${req.url}`;
  next();
}

/** A 404 that tells a client on the wrong base path where the API is. */
function noRouteMessage(method: string, fullPath: string): string {
  // The path is the caller's: quote at most a short prefix of it.
  const path = fullPath.length > 100 ? `${fullPath.slice(0, 100)}…` : fullPath;
  if (path.startsWith(`${API_BASE_PATH}/`) || path === API_BASE_PATH) return `No route for ${method} ${path}. GET ${API_BASE_PATH}/openapi.json lists this node's operations.`;
  return `No route for ${method} ${path}: this node's API is under ${API_BASE_PATH} (e.g. ${method} ${API_BASE_PATH}${path.startsWith("/") ? path : `/${path}`}); set your client's base URL to http(s)://<host>:<port>${API_BASE_PATH}.`;
}

function errorHandler(logger: Logger, translate: (error: unknown, req: Request, res: Response) => unknown) {
  return (thrown: unknown, req: Request, res: Response, _next: NextFunction) => {
    const error = translate(thrown, req, res);
    const { status, body, headers } = toErrorResponse(error);
    // The request's own logger carries its id.
    const log = res.locals.ctx?.log ?? logger;
    // A 503 the node chose (a model at capacity or failing to load, the body budget full) is load
    // shedding, not a fault: one line without a stack, so a burst of them does not flood the log.
    if (status === 503 && error instanceof ApiError) log.warn({ status, path: req.path, error: error.message }, "request refused");
    else if (status >= 500) log.error({ err: error, path: req.path }, "request failed");
    else log.debug({ status, error: body.error }, "request rejected");
    if (res.headersSent) {
      res.end();
      return;
    }
    res.set({ ...headers, ...errorHostHeader() });
    res.status(status).json(formatErrorBody(res.locals.ctx?.errorFormat ?? "provider", status, body));
  };
}
