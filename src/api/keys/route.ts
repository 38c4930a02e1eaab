import { Router, type NextFunction, type Request, type Response } from "express";
import type { AppDeps } from "../../appDeps.js";
import { PermissionDeniedError, RateLimitError } from "../../errors.js";
import { parse, requireJson } from "../../http/parse.js";
import type { AuthContext } from "../../http/requestContext.js";
import { RateLimiter } from "../../limits/RateLimiter.js";
import { isOperatorKey } from "../../store/apiKeys.js";
import { CreateApiKeyRequest, DeleteApiKeyQuery, KeyFieldsQuery, UpdateApiKeyRequest, Web3KeyRequest } from "./schema.js";
import { ApiKeyService } from "./service.js";
import { Web3Keys } from "./Web3Keys.js";

/** The reference: key creation is limited to 20 requests per minute. */
const KEY_CREATION_LIMIT = { rpm: 20 };

/**
 * Key management is for admin keys, each in its own account; an inference key gets a 403 that
 * says what to use instead. Keys made here are never operator keys.
 */
function requireAdminKey(_req: Request, res: Response, next: NextFunction) {
  if (res.locals.ctx.auth?.keyType !== "ADMIN") {
    throw new PermissionDeniedError(
      "API keys can only be managed with an admin API key; this request used an inference key. Create an admin key with `hearth keys create --admin`.",
    );
  }
  next();
}

const callerOf = (res: Response) => res.locals.ctx.auth!;
/** Whether the request opted in to the key objects' extension fields (?include=service_fields). */
const serviceFieldsOf = (req: Request) => parse(KeyFieldsQuery, req.query).include === "service_fields";

export type KeysRouterDeps = Pick<AppDeps, "config" | "db" | "credits" | "models" | "limits" | "now" | "wallet" | "authenticateKey" | "jsonBody">;

export function keysRouter(deps: KeysRouterDeps): Router {
  const service = new ApiKeyService({
    db: deps.db,
    credits: deps.credits,
    models: deps.models,
    limits: deps.limits,
    resetHourUtc: deps.config.diemResetHourUtc,
    now: deps.now,
  });
  const creationLimiter = new RateLimiter(deps.now);
  const callerIsOperator = (caller: AuthContext) => caller.kind === "apiKey" && isOperatorKey(deps.db, caller.apiKeyId);
  const web3Keys = new Web3Keys({
    db: deps.db,
    credits: deps.credits,
    nonces: deps.wallet.nonces,
    policy: deps.config.wallet.web3Keys,
    now: deps.now,
    createKey: (accountId, request) => service.create(accountId, request, false),
  });
  const router = Router();

  // A wallet's own key: no API key needed (the signature is the credential). Registered before /api_keys/:id.
  router.get("/api_keys/generate_web3_key", (_req, res) => {
    res.json({ success: true, data: { token: web3Keys.issueToken() } });
  });
  router.post("/api_keys/generate_web3_key", deps.jsonBody, async (req, res) => {
    requireJson(req);
    const body = parse(Web3KeyRequest, req.body);
    const decision = creationLimiter.admit(`web3-key:${body.address.toLowerCase()}`, KEY_CREATION_LIMIT);
    if (!decision.allowed) throw new RateLimitError("Rate limit exceeded: at most 20 API keys may be created per minute.", decision.headers);
    res.json(await web3Keys.createKey(body));
  });

  // Any key: its own limits and its account's refusals. (Registered before /api_keys/:id.)
  router.get("/api_keys/rate_limits", deps.authenticateKey, (_req, res) => {
    res.json(service.rateLimits(res.locals.ctx));
  });
  for (const path of ["/api_keys/rate_limits/log", "/api_keys/rate_limit_logs"]) {
    router.get(path, deps.authenticateKey, (_req, res) => {
      res.json(service.rateLimitLog(callerOf(res)));
    });
  }

  router.get("/api_keys", deps.authenticateKey, requireAdminKey, (req, res) => {
    res.json({ object: "list", data: service.list(callerOf(res).accountId, serviceFieldsOf(req)) });
  });

  router.get("/api_keys/:id", deps.authenticateKey, requireAdminKey, (req, res) => {
    res.json({ data: service.get(callerOf(res).accountId, String(req.params.id), serviceFieldsOf(req)) });
  });

  router.post("/api_keys", deps.authenticateKey, requireAdminKey, deps.jsonBody, (req, res) => {
    requireJson(req);
    const caller = callerOf(res);
    const body = parse(CreateApiKeyRequest, req.body);
    const decision = creationLimiter.admit(`key-create:${caller.accountId}`, KEY_CREATION_LIMIT);
    if (!decision.allowed) throw new RateLimitError("Rate limit exceeded: at most 20 API keys may be created per minute.", decision.headers);
    res.json(service.create(caller.accountId, body, callerIsOperator(caller), serviceFieldsOf(req)));
  });

  router.patch("/api_keys", deps.authenticateKey, requireAdminKey, deps.jsonBody, (req, res) => {
    requireJson(req);
    const caller = callerOf(res);
    res.json(service.update(caller.accountId, parse(UpdateApiKeyRequest, req.body), callerIsOperator(caller), serviceFieldsOf(req)));
  });

  router.delete("/api_keys", deps.authenticateKey, requireAdminKey, (req, res) => {
    const { id } = parse(DeleteApiKeyQuery, req.query);
    const caller = callerOf(res);
    // Behind the API-key authenticator: the caller is always a key.
    const target = id ?? (caller.kind === "apiKey" ? caller.apiKeyId : undefined);
    if (target === undefined) throw new PermissionDeniedError("Name the key to delete with ?id=");
    res.json(service.revoke(caller.accountId, target, callerIsOperator(caller)));
  });

  return router;
}
