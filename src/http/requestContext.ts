import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { NextFunction, Request, Response } from "express";
import type { LimitOverrides } from "../limits/tiers.js";
import type { Logger } from "../logger.js";
import type { ErrorFormat } from "./errorFormat.js";

/** A caller authenticated with `Authorization: Bearer <key>`. */
export interface ApiKeyAuthContext {
  kind: "apiKey";
  accountId: string;
  apiKeyId: string;
  keyType: "ADMIN" | "INFERENCE";
  rateLimitTier: "standard" | "partner";
  rateLimitOverrides: LimitOverrides | null;
  /** A gateway's key on a pool node: no per-key limits (the gateway applies its callers'). */
  gateway: boolean;
}

/**
 * A caller signed in with a wallet (SIGN-IN-WITH-X). It has the same account fields as a key
 * (its ledger account, standard limits, never admin) and no key id.
 */
export interface WalletAuthContext {
  kind: "wallet";
  accountId: string;
  apiKeyId: null;
  keyType: "INFERENCE";
  rateLimitTier: "standard";
  rateLimitOverrides: null;
  gateway: false;
  wallet: { address: string; family: "evm" | "solana"; chainId: string };
}

export type AuthContext = ApiKeyAuthContext | WalletAuthContext;

/** What rate limits and abuse counters are keyed by: the key, or the wallet. */
export const authSubject = (auth: AuthContext) => (auth.kind === "wallet" ? `wallet:${auth.wallet.address}` : auth.apiKeyId);

export interface RequestContext {
  /** This node's id for the request (CF-RAY, logs, holds, usage rows): always generated here, so always unique. */
  requestId: string;
  /** The id sent back as x-request-id: the client's own X-Request-Id when it sent a usable one, else `requestId`. */
  clientRequestId: string;
  /** The shape error bodies are written in (the node's --error-format). */
  errorFormat: ErrorFormat;
  startedAt: number;
  /** This request's logger: every line it writes carries the request id. */
  log: Logger;
  /** Aborted when the client goes away before the response is complete. */
  abort: AbortController;
  auth?: AuthContext;
  /**
   * Counts bytes the request reads into memory besides its body (a file fetched from a URL it
   * names) against the node's body budget until its response ends; throws the 429 or 503 past it.
   * Set by the app (BodyBudget.contextHolds); absent where no budget applies.
   */
  holdBytes?: (bytes: number) => void;
  /** A verified wallet sign-in on wallet-only endpoints (x402 balance and transactions). */
  signIn?: { address: string; family: "evm" | "solana"; chainId: string };
}

declare module "express-serve-static-core" {
  interface Locals {
    ctx: RequestContext;
  }
}

/** `yyyymmdd.hhmmss` (UTC), the form of the reference's interface version. */
export function formatServiceVersion(date: Date): string {
  const iso = date.toISOString();
  return `${iso.slice(0, 10).replaceAll("-", "")}.${iso.slice(11, 19).replaceAll(":", "")}`;
}

const HOST_NAME = hostname();

/** A client's X-Request-Id is echoed only when it is a short printable token (it goes into headers and logs). */
const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:/+=-]{1,128}$/;

/**
 * First middleware: request id (echoed as CF-RAY, and as x-request-id unless the client sent its
 * own), the version header, the client's timestamp echo, and an AbortController tied to the
 * client connection.
 */
export function requestContext(serviceVersion: string, logger: Logger, errorFormat: ErrorFormat = "provider") {
  return (req: Request, res: Response, next: NextFunction) => {
    const requestId = randomUUID();
    const sent = req.get("x-request-id");
    const clientRequestId = sent !== undefined && CLIENT_REQUEST_ID.test(sent) ? sent : requestId;
    const log = logger.child(clientRequestId === requestId ? { requestId } : { requestId, clientRequestId });
    const ctx: RequestContext = { requestId, clientRequestId, errorFormat, startedAt: Date.now(), log, abort: new AbortController() };
    res.locals.ctx = ctx;
    res.setHeader("CF-RAY", ctx.requestId);
    res.setHeader("x-request-id", clientRequestId);
    res.setHeader("x-service-version", serviceVersion);
    const clientTimestamp = req.get("x-service-request-timestamp-ms") ?? req.get("x-venice-request-timestamp-ms");
    if (clientTimestamp && /^\d{1,16}$/.test(clientTimestamp)) res.setHeader("x-service-request-timestamp-ms", clientTimestamp);
    res.on("close", () => {
      if (!res.writableFinished) ctx.abort.abort(new Error("client disconnected"));
    });
    next();
  };
}

export const errorHostHeader = () => ({ "x-service-host-name": HOST_NAME });
