import { randomBytes } from "node:crypto";
import type { Request } from "express";
import { microsToUnits, unitsToMicros } from "../billing/money.js";
import type { X402Config } from "../config/walletConfig.js";
import { BASE_MAINNET, SOLANA_MAINNET } from "../config/walletConfig.js";
import { encodeJsonHeader } from "./encoding.js";
import type { PublicOrigin, PublicOrigins } from "./PublicOrigins.js";

/** Where the API lives under an origin (app.ts mounts the routers here). */
const API_PREFIX = "/api/v1";
const DESCRIPTION = "Hearth API";

/** The wire shapes are zod schemas in the x402 endpoint group (they are documented in the OpenAPI document). */
export type { PaymentOption, PaymentRequired, SiwxChallenge } from "../api/x402/schema.js";
import type { PaymentOption, PaymentRequired, SiwxChallenge, TopUpPaymentRequired } from "../api/x402/schema.js";

/** The JSON Schema of a sign-in proof, as the x402 sign-in-with-x extension advertises it. */
const SIWX_PROOF_SCHEMA = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  properties: {
    address: { type: "string" },
    message: { type: "string", description: "the signed EIP-4361 / Solana sign-in text (or send the structured fields instead)" },
    signature: { type: "string" },
    chainId: { type: ["string", "number"] },
    type: { type: "string", enum: ["eip191", "ed25519"] },
  },
  required: ["address", "signature"],
};

/**
 * Builds what this node asks for: the payment options it accepts for top-ups, sign-in
 * challenges, and the three kinds of 402 body (x402 top-up requirements, the unauthenticated
 * discovery answer on paid endpoints, and the signed-in wallet with too little credit).
 */
export class PaymentRequirements {
  constructor(
    private readonly config: X402Config,
    readonly origins: PublicOrigins,
    private readonly now: () => number,
  ) {}

  /** Whether top-ups can be paid here (a settlement mode and at least one rail). */
  get topUpsEnabled(): boolean {
    return this.config.settlement !== undefined && this.accepts().length > 0;
  }

  /** The chains sign-ins may name: the configured rails' (Base and Solana mainnet by default). */
  siwxChains(): SiwxChallenge["supportedChains"] {
    return [
      { chainId: this.config.base?.network ?? BASE_MAINNET, type: "eip191" },
      { chainId: this.config.solana?.network ?? SOLANA_MAINNET, type: "ed25519" },
    ];
  }

  /** The accepted top-up payments, each at the minimum amount (clients may sign more). */
  accepts(): PaymentOption[] {
    if (!this.config.settlement) return [];
    const amount = String(unitsToMicros(this.config.minimumTopUpUsd));
    const options: PaymentOption[] = [];
    const { base, solana } = this.config;
    if (base) {
      options.push({
        scheme: "exact",
        network: base.network,
        amount,
        asset: base.asset,
        payTo: base.payTo,
        maxTimeoutSeconds: this.config.maxTimeoutSeconds,
        extra: { name: base.eip712.name, version: base.eip712.version },
      });
    }
    if (solana) {
      options.push({
        scheme: "exact",
        network: solana.network,
        amount,
        asset: solana.asset,
        payTo: solana.payTo,
        maxTimeoutSeconds: this.config.maxTimeoutSeconds,
        extra: { feePayer: solana.feePayer },
      });
    }
    return options;
  }

  originFor(req: Request): PublicOrigin {
    return this.origins.forHost(req.get("host"));
  }

  /** A fresh sign-in challenge (the nonce is advisory: clients may use their own). */
  siwxChallenge(origin: PublicOrigin, resourceUrl: string): SiwxChallenge {
    const issued = this.now();
    return {
      info: {
        domain: origin.domain,
        uri: resourceUrl,
        version: "1",
        nonce: randomBytes(16).toString("hex"),
        issuedAt: new Date(issued).toISOString(),
        expirationTime: new Date(issued + 5 * 60_000).toISOString(),
        statement: this.config.siwx.statement,
      },
      supportedChains: this.siwxChains(),
    };
  }

  paymentRequired(req: Request, error: string): PaymentRequired {
    const origin = this.originFor(req);
    const url = `${origin.base}${req.originalUrl.split("?")[0]}`;
    return {
      x402Version: 2,
      error,
      resource: { url, description: DESCRIPTION, mimeType: "application/json" },
      accepts: this.accepts(),
      extensions: { "sign-in-with-x": { ...this.siwxChallenge(origin, url), schema: SIWX_PROOF_SCHEMA } },
    };
  }

  /**
   * POST /x402/top-up on a node whose operator has not enabled top-ups: the provider's 402 with
   * nothing in `accepts` (its document has no 501), with or without a payment sent. The body is
   * the provider's two fields; why (error, message) and the rest of x402's PaymentRequired are in
   * the PAYMENT-REQUIRED header.
   */
  topUpsDisabled(req: Request): { body: TopUpPaymentRequired; headers: Record<string, string> } {
    const required = {
      ...this.paymentRequired(req, "X402_TOPUPS_DISABLED"),
      accepts: [],
      message:
        "Wallet top-ups are not enabled on this node: its operator has not configured an x402 settlement mode (--x402-settlement) and payment rail (--wallet-config). Use an API key instead.",
    };
    return { body: { x402Version: required.x402Version, accepts: [] }, headers: { "PAYMENT-REQUIRED": encodeJsonHeader(required) } };
  }

  /**
   * POST /x402/top-up without a payment: the requirements. The body has the provider's fields
   * (x402Version, accepts) and nothing else, as its schema says; the PAYMENT-REQUIRED header
   * carries x402's whole PaymentRequired (resource, error, the sign-in-with-x extension).
   */
  topUpRequired(req: Request): { body: TopUpPaymentRequired; headers: Record<string, string> } {
    const required = this.paymentRequired(req, "PAYMENT-SIGNATURE header is required");
    return { body: { x402Version: required.x402Version, accepts: required.accepts }, headers: { "PAYMENT-REQUIRED": encodeJsonHeader(required) } };
  }

  /** A paid endpoint called with no credentials at all: the x402 discovery answer. */
  discovery(req: Request): { body: Record<string, unknown>; headers: Record<string, string> } {
    const required = this.paymentRequired(
      req,
      this.topUpsEnabled ? "Payment required" : "Payment required: send an API key, or sign in with a wallet (wallet top-ups are not enabled on this node)",
    );
    const body = {
      ...required,
      authOptions: {
        apiKey: {
          header: "Authorization: Bearer YOUR_API_KEY",
          getKey: "Ask this node's operator for a key (hearth keys create)",
          docs: "docs/billing.md, section 'Billing and keys'",
        },
        x402Wallet: {
          header: "SIGN-IN-WITH-X",
          legacyHeader: "X-Sign-In-With-X",
          topUp: `POST ${API_PREFIX}/x402/top-up`,
          docs: "docs/wallets.md",
        },
      },
    };
    return { body, headers: { "PAYMENT-REQUIRED": encodeJsonHeader(required) } };
  }

  /** A signed-in wallet whose credit does not cover the request. */
  walletInsufficient(req: Request, balanceMicros: number): { body: Record<string, unknown>; headers: Record<string, string> } {
    const required = this.paymentRequired(req, "Insufficient x402 balance");
    const origin = this.originFor(req);
    const primary = required.accepts[0];
    const body = {
      error: "Payment required",
      code: "PAYMENT_REQUIRED",
      reason: "insufficient_balance",
      message: this.topUpsEnabled ? "Insufficient x402 balance" : "Insufficient x402 balance (wallet top-ups are not enabled on this node)",
      currentBalanceUsd: microsToUnits(balanceMicros),
      minimumBalanceUsd: this.config.minimumBalanceUsd,
      description: DESCRIPTION,
      suggestedTopUpUsd: this.config.suggestedTopUpUsd,
      minimumTopUpUsd: this.config.minimumTopUpUsd,
      supportedTokens: ["USDC"],
      supportedChains: required.accepts.map((a) => (a.network.startsWith("solana:") ? "solana" : "base")),
      topUpInstructions: {
        step1: `POST ${API_PREFIX}/x402/top-up with no payment header to get payment requirements`,
        step2: "Choose a payment option from accepts and sign a USDC transfer authorization using the x402 SDK (createPaymentHeader)",
        step3: `POST ${API_PREFIX}/x402/top-up with the signed PAYMENT-SIGNATURE header`,
        receiverWallet: primary?.payTo ?? "",
        tokenAddress: primary?.asset ?? "",
        tokenDecimals: 6,
        network: primary?.network ?? "",
        minimumAmountUsd: this.config.minimumTopUpUsd,
      },
      siwxChallenge: this.siwxChallenge(origin, required.resource.url),
    };
    return { body, headers: { "PAYMENT-REQUIRED": encodeJsonHeader(required) } };
  }
}
