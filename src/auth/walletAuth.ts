import type { NextFunction, Request, RequestHandler, Response } from "express";
import type { Credits } from "../billing/credits.js";
import { microsToUnits, unitsToMicros } from "../billing/money.js";
import { type ApiError, AuthenticationError, PaymentRequiredError, WalletSignInError, X402PaymentRequiredError } from "../errors.js";
import type { WalletAuthContext } from "../http/requestContext.js";
import type { Db } from "../store/Store.js";
import { ensureWalletAccount, findWallet } from "../store/wallets.js";
import { firstHeader, SIWX_HEADERS } from "../x402/encoding.js";
import type { PaymentRequirements } from "../x402/PaymentRequirements.js";
import { SiwxError, type SiwxVerifier, type VerifiedSignIn } from "../x402/siwx/SiwxVerifier.js";
import { apiKeyAuth } from "./apiKeyAuth.js";

export interface WalletAuthOptions {
  db: Db;
  credits: Credits;
  siwx: SiwxVerifier;
  requirements: PaymentRequirements;
  minimumBalanceUsd: number;
  now: () => number;
}

export interface Authenticators {
  /**
   * Paid endpoints (every inference route and the RPC proxy): an API key (Bearer) or a
   * wallet sign-in (SIGN-IN-WITH-X). No credentials at all: 402 with the x402 discovery
   * answer. A bad key or a bad sign-in: 401. A wallet below the minimum balance: 402 with
   * top-up instructions. Drop-in for `deps.authenticate`.
   */
  paid: RequestHandler;
  /** Wallet-only endpoints (x402 balance and transactions): a sign-in is required; 401 without. */
  walletSignIn: RequestHandler;
  /** API-key-only endpoints (accounts, keys, admin): 401 without a key. */
  apiKey: RequestHandler;
}

export function createAuthenticators(options: WalletAuthOptions): Authenticators {
  const keyAuth = apiKeyAuth(options.db);
  const { db, credits, siwx, requirements } = options;
  const minimumMicros = unitsToMicros(options.minimumBalanceUsd);

  const verify = async (header: string): Promise<VerifiedSignIn> => {
    try {
      return await siwx.verify(header);
    } catch (error) {
      if (error instanceof SiwxError) throw new WalletSignInError(error.reason, error.message);
      throw error;
    }
  };

  const paid: RequestHandler = async (req: Request, res: Response, next: NextFunction) => {
    if (req.get("authorization")) return keyAuth(req, res, next);
    const header = firstHeader(req, SIWX_HEADERS);
    if (!header) {
      const { body, headers } = requirements.discovery(req);
      throw new X402PaymentRequiredError(body, headers);
    }
    const signIn = await verify(header);
    // A wallet that never topped up has no account yet; it is made only when the wallet can spend.
    const existing = findWallet(db, signIn.address);
    const available = existing ? availableMicros(credits, existing.accountId) : 0;
    if (available < minimumMicros || (!existing && minimumMicros > 0)) {
      const { body, headers } = requirements.walletInsufficient(req, available);
      throw new X402PaymentRequiredError(body, headers);
    }
    const accountId = existing?.accountId ?? ensureWalletAccount(db, signIn.address, signIn.family, options.now());
    const auth: WalletAuthContext = {
      kind: "wallet",
      accountId,
      apiKeyId: null,
      keyType: "INFERENCE",
      rateLimitTier: "standard",
      gateway: false,
      rateLimitOverrides: null,
      wallet: { address: signIn.address, family: signIn.family, chainId: signIn.chainId },
    };
    res.locals.ctx.auth = auth;
    reportBalanceRemaining(res, () => availableMicros(credits, accountId));
    next();
  };

  const walletSignIn: RequestHandler = async (req: Request, res: Response, next: NextFunction) => {
    const header = firstHeader(req, SIWX_HEADERS);
    if (!header) throw new AuthenticationError("Authentication failed: this endpoint needs a SIGN-IN-WITH-X header signed by the wallet");
    res.locals.ctx.signIn = await verify(header);
    next();
  };

  return { paid, walletSignIn, apiKey: keyAuth };
}

/** What a wallet can spend now: its balance less what requests in flight hold. */
export function availableMicros(credits: Credits, accountId: string): number {
  const balance = credits.snapshot(accountId);
  return Math.max(0, balance.usd + balance.bundled - balance.held.usd - balance.held.bundled);
}

/**
 * X-Balance-Remaining on every response to a wallet caller: what it can still spend when the
 * headers leave (after settlement for a JSON answer; at the start, less the request's own
 * hold, for a stream).
 */
function reportBalanceRemaining(res: Response, read: () => number): void {
  const writeHead = res.writeHead;
  res.writeHead = function (this: Response, ...args: unknown[]) {
    if (!this.headersSent) {
      try {
        this.setHeader("X-Balance-Remaining", microsToUnits(read()).toFixed(6));
      } catch {
        // A closed database at shutdown must not break the response.
      }
    }
    return (writeHead as (...a: unknown[]) => Response).apply(this, args);
  } as typeof res.writeHead;
}

/**
 * The error handler's hook: a signed-in wallet whose credit cannot cover a request gets the
 * x402 variant of 402 (top-up instructions, sign-in challenge, PAYMENT-REQUIRED) instead of the
 * API-key INSUFFICIENT_BALANCE body.
 */
export function walletPaymentError(requirements: PaymentRequirements, credits: Credits) {
  return (error: unknown, req: Request, res: Response): unknown => {
    const auth = res.locals.ctx?.auth;
    if (!(error instanceof PaymentRequiredError) || auth?.kind !== "wallet") return error;
    let available = 0;
    try {
      available = availableMicros(credits, auth.accountId);
    } catch {
      // keep 0
    }
    const { body, headers } = requirements.walletInsufficient(req, available);
    return new X402PaymentRequiredError(body, headers) satisfies ApiError;
  };
}
