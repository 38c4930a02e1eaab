import type { NextFunction, Request, Response } from "express";
import { AuthenticationError, PermissionDeniedError } from "../errors.js";
import type { LimitOverrides } from "../limits/tiers.js";
import { findActiveKey, touchApiKey } from "../store/apiKeys.js";
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
    };
    next();
  };
}

/** For admin-only routes, after apiKeyAuth. */
export function requireAdmin(_req: Request, res: Response, next: NextFunction) {
  if (res.locals.ctx.auth?.keyType !== "ADMIN") throw new PermissionDeniedError("This endpoint needs an admin API key");
  next();
}
