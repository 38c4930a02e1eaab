import type { NextFunction, Request, RequestHandler, Response } from "express";
import type { Limits } from "./Limits.js";

/**
 * An authenticator whose callers are then admitted to the account endpoints' window (keys,
 * billing, characters, admin): a 429 past it, and the x-ratelimit-* headers on every answer.
 */
export function withAccountLimit(authenticate: RequestHandler, limits: Pick<Limits, "admitAccount">): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) =>
    authenticate(req, res, (error?: unknown) => {
      if (error !== undefined) {
        next(error);
        return;
      }
      try {
        res.set(limits.admitAccount(res.locals.ctx));
      } catch (refused) {
        next(refused);
        return;
      }
      next();
    });
}
