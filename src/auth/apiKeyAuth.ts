import type { NextFunction, Request, Response } from "express";
import { AuthenticationError, PermissionDeniedError } from "../errors.js";
import type { LimitOverrides } from "../limits/tiers.js";
import { findActiveKey, isOperatorKey, touchApiKey } from "../store/apiKeys.js";
import type { Db } from "../store/Store.js";

/** Reads `Authorization: Bearer <key>`; sets the request's auth or answers 401. */
export function apiKeyAuth(db: Db, now: () => number = Date.now) {
  return (req: Request, res: Response, next: NextFunction) => {
    const header = req.get("authorization");
    if (!header) throw new AuthenticationError("Authentication failed: missing API key (send Authorization: Bearer <key>)");
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) throw new AuthenticationError("Authentication failed: the Authorization header must be 'Bearer <key>'");
    const key = findActiveKey(db, match[1]!, now());
    if (!key) throw new AuthenticationError("Authentication failed: invalid, revoked or expired API key");
    touchApiKey(db, key.id, now());
    res.locals.ctx.auth = {
      kind: "apiKey",
      accountId: key.accountId,
      apiKeyId: key.id,
      keyType: key.keyType,
      rateLimitTier: key.rateLimitTier,
      rateLimitOverrides: key.rateLimitOverrides ? (JSON.parse(key.rateLimitOverrides) as LimitOverrides) : null,
      gateway: key.gateway,
    };
    next();
  };
}

/** For admin-only routes, after apiKeyAuth. */
export function requireAdmin(_req: Request, res: Response, next: NextFunction) {
  if (res.locals.ctx.auth?.keyType !== "ADMIN") throw new PermissionDeniedError("This endpoint needs an admin API key");
  next();
}

/**
 * For the node operator's routes (granting credit, models, every account, metrics), after
 * apiKeyAuth: an operator key only. An account's admin keys manage that account alone.
 */
export function requireOperator(db: Db) {
  return (_req: Request, res: Response, next: NextFunction) => {
    const auth = res.locals.ctx.auth;
    if (auth?.kind !== "apiKey" || !isOperatorKey(db, auth.apiKeyId)) {
      throw new PermissionDeniedError(
        auth?.keyType === "ADMIN"
          ? "This endpoint is the node operator's: an account admin key manages its own account only. Use an operator key (`hearth keys create --operator`) or the CLI."
          : "This endpoint needs the node operator's admin API key (`hearth keys create --operator`)",
      );
    }
    next();
  };
}
