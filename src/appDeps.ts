import type { RequestHandler } from "express";
import type { Credits } from "./billing/credits.js";
import type { CharacterCatalog } from "./characters/CharacterCatalog.js";
import type { ServerConfig } from "./config/serverSettings.js";
import type { RequestLog } from "./console/RequestLog.js";
import type { JobQueue } from "./jobs/JobQueue.js";
import type { Limits } from "./limits/Limits.js";
import type { Logger } from "./logger.js";
import type { Metrics } from "./metrics/Metrics.js";
import type { ModelManager } from "./models/ModelManager.js";
import type { Db } from "./store/Store.js";
import type { WalletServices } from "./x402/WalletServices.js";

/**
 * Everything the app is built from. A types-only module, so routers can name the slice they use
 * (`Pick<AppDeps, ...>`) without importing app.ts, which imports every router.
 */
export interface AppDeps {
  config: ServerConfig;
  db: Db;
  models: ModelManager;
  characters: CharacterCatalog;
  logger: Logger;
  startedAt: number;
  credits: Credits;
  limits: Limits;
  /** Durable jobs (video generation). */
  jobs: JobQueue;
  /** Injectable clock (tests move time instead of sleeping). */
  now: () => number;
  wallet: WalletServices;
  /** Recent API requests for the console's live view (absent: not recorded). */
  requestLog?: RequestLog;
  /** Prometheus metrics of this server (GET /metrics). */
  metrics: Metrics;
  /**
   * Route-level middleware, in the order the architecture gives: authentication, then body parsing.
   * `authenticate` is for paid endpoints: an API key or a wallet sign-in (SIGN-IN-WITH-X); no
   * credentials at all get the x402 discovery 402.
   */
  authenticate: RequestHandler;
  /** Wallet-only endpoints: a verified sign-in in `ctx.signIn`, 401 without. */
  authenticateWallet: RequestHandler;
  /** API-key-only endpoints (account and admin routes): 401 without a key. */
  authenticateKey: RequestHandler;
  jsonBody: RequestHandler;
  /** multipart/form-data bodies read whole into a Buffer (src/http/multipart.ts splits them); other types pass. */
  multipartBody: RequestHandler;
}
