import { Router, type Request, type Response } from "express";
import { z } from "zod";
import type { AppDeps } from "../../appDeps.js";
import { availableMicros } from "../../auth/walletAuth.js";
import { microsToUnits, unitsToMicros } from "../../billing/money.js";
import { InvalidRequestError, WalletMismatchError } from "../../errors.js";
import { parse } from "../../http/parse.js";
import { usdHistory } from "../../store/ledger.js";
import type { Db } from "../../store/Store.js";
import { findWallet } from "../../store/wallets.js";
import { firstHeader, PAYMENT_HEADERS } from "../../x402/encoding.js";
import { normalizeAnyAddress } from "../../x402/networks.js";
import { TransactionsQuery, WalletAddressParam, type X402BalanceResponse, type X402Transaction, type X402TransactionsResponse } from "./schema.js";

/** Ledger kinds as the reference's transaction types. */
const TRANSACTION_TYPES: Record<string, string> = {
  topup: "TOP_UP",
  charge: "CHARGE",
  topup_reversal: "REVERSAL",
  grant: "GRANT",
};

export type X402RouterDeps = Pick<AppDeps, "config" | "db" | "credits" | "wallet" | "authenticateWallet">;

export function x402Router(deps: X402RouterDeps): Router {
  const router = Router();
  const { topUps, requirements } = deps.wallet;
  const config = deps.config.wallet.x402;

  router.post("/x402/top-up", async (req, res) => {
    if (!topUps.enabled) {
      const { body, headers } = requirements.topUpsDisabled(req);
      res.status(402).set(headers).json(body);
      return;
    }
    const header = firstHeader(req, PAYMENT_HEADERS);
    if (!header) {
      const { body, headers } = requirements.topUpRequired(req);
      res.status(402).set(headers).json(body);
      return;
    }
    const result = await topUps.topUp(header);
    res.set(result.headers).json(result.body);
  });

  router.get("/x402/balance/:walletAddress", deps.authenticateWallet, (req, res) => {
    const wallet = requestedWallet(req, res);
    const record = findWallet(deps.db, wallet);
    const balance = record ? deps.credits.snapshot(record.accountId) : undefined;
    const available = record ? availableMicros(deps.credits, record.accountId) : 0;
    const body: X402BalanceResponse = {
      success: true,
      data: {
        walletAddress: wallet,
        balanceUsd: balance ? microsToUnits(balance.usd + balance.bundled) : 0,
        canConsume: available > 0 && available >= unitsToMicros(config.minimumBalanceUsd),
        minimumTopUpUsd: config.minimumTopUpUsd,
        suggestedTopUpUsd: config.suggestedTopUpUsd,
      },
    };
    res.json(body);
  });

  router.get("/x402/transactions/:walletAddress", deps.authenticateWallet, (req, res) => {
    const wallet = requestedWallet(req, res);
    const { limit, offset } = parse(TransactionsQuery, req.query);
    const record = findWallet(deps.db, wallet);
    const balance = record ? deps.credits.snapshot(record.accountId) : undefined;
    const rows = record ? walletTransactions(deps.db, record.accountId, limit + 1, offset) : [];
    const body: X402TransactionsResponse = {
      success: true,
      data: {
        walletAddress: wallet,
        currentBalance: balance ? microsToUnits(balance.usd + balance.bundled) : 0,
        transactions: rows.slice(0, limit),
        pagination: { limit, offset, hasMore: rows.length > limit },
      },
    };
    res.json(body);
  });

  return router;
}

/** The path's wallet, normalised; 400 when it is not an address, 403 when it is not the signed-in one. */
function requestedWallet(req: Request, res: Response): string {
  const { walletAddress } = parse(z.object({ walletAddress: WalletAddressParam }), req.params);
  const wallet = normalizeAnyAddress(walletAddress);
  if (!wallet) throw InvalidRequestError.forField(["walletAddress"], "not a valid EVM or Solana wallet address");
  if (wallet.address !== res.locals.ctx.signIn?.address) throw new WalletMismatchError();
  return wallet.address;
}

/**
 * A wallet's ledger, newest first: one entry per top-up or reversal, and one per request for
 * its charges (a request's cost lines are summed), with the balance after each.
 */
function walletTransactions(db: Db, accountId: string, limit: number, offset: number): X402Transaction[] {
  return usdHistory(db, accountId, limit, offset).map((row) => ({
    id: `ledger_${row.id}`,
    amount: microsToUnits(row.deltaMicros),
    balanceAfter: microsToUnits(row.balanceAfterMicros),
    type: TRANSACTION_TYPES[row.kind] ?? row.kind.toUpperCase(),
    createdAt: new Date(row.createdAt).toISOString(),
    requestId: row.kind === "charge" ? row.requestId : null,
    modelId: row.kind === "charge" ? row.model : null,
  }));
}
