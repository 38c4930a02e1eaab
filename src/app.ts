import express, { type Express, type NextFunction, type Request, type RequestHandler, type Response } from "express";
import type { CharacterCatalog } from "./characters/CharacterCatalog.js";
import type { ServerConfig } from "./config.js";
import { charactersRouter } from "./api/characters/route.js";
import { chatRouter } from "./api/chat/route.js";
import { modelsRouter } from "./api/models/route.js";
import { apiKeyAuth } from "./auth/apiKeyAuth.js";
import { NotFoundError, toErrorResponse } from "./errors.js";
import { errorHostHeader, formatServiceVersion, requestContext } from "./http/requestContext.js";
import type { Logger } from "./logger.js";
import type { ModelManager } from "./models/ModelManager.js";
import type { Db } from "./store/Store.js";

export const API_BASE_PATH = "/api/v1";

export interface AppDeps {
  config: ServerConfig;
  db: Db;
  models: ModelManager;
  characters: CharacterCatalog;
  logger: Logger;
  startedAt: number;
  /** Route-level middleware, in the order the architecture gives: authentication, then body parsing. */
  authenticate: RequestHandler;
  jsonBody: RequestHandler;
}

/** The routers under /api/v1; a new endpoint group is one line here. */
const ROUTERS = [modelsRouter, chatRouter, charactersRouter] as const;

export function createApp(deps: Omit<AppDeps, "authenticate" | "jsonBody">): Express {
  const full: AppDeps = {
    ...deps,
    authenticate: apiKeyAuth(deps.db),
    jsonBody: express.json({ limit: "25mb", type: "application/json" }),
  };
  const app = express();
  app.disable("x-powered-by");
  app.set("query parser", "simple");
  app.use(requestContext(formatServiceVersion(new Date(deps.startedAt))));
  for (const router of ROUTERS) app.use(API_BASE_PATH, router(full));
  app.use((req, _res, next) => next(new NotFoundError(`No route for ${req.method} ${req.path}`)));
  app.use(errorHandler(deps.logger));
  return app;
}

function errorHandler(logger: Logger) {
  return (error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const { status, body, headers } = toErrorResponse(error);
    const requestId = res.locals.ctx?.requestId;
    if (status >= 500) logger.error({ err: error, requestId, path: req.path }, "request failed");
    else logger.debug({ requestId, status, error: body.error }, "request rejected");
    if (res.headersSent) {
      res.end();
      return;
    }
    res.set({ ...headers, ...errorHostHeader() });
    res.status(status).json(body);
  };
}
