import { z } from "zod";

/** The reference's wallet path parameter: an EVM or a Solana address. */
export const WalletAddressParam = z.string().regex(/^(0x[a-fA-F0-9]{40}|[1-9A-HJ-NP-Za-km-z]{32,44})$/, "an EVM (0x...) or Solana (base58) wallet address");

export const TransactionsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(50),
  offset: z.coerce.number().int().min(0).default(0),
});

export const X402BalanceResponse = z.object({
  success: z.literal(true),
  data: z.object({ walletAddress: z.string(), balanceUsd: z.number(), canConsume: z.boolean(), minimumTopUpUsd: z.number(), suggestedTopUpUsd: z.number() }),
});
export type X402BalanceResponse = z.infer<typeof X402BalanceResponse>;

export const X402Transaction = z.object({
  id: z.string(),
  /** Positive for top-ups and grants, negative for charges and reversals. */
  amount: z.number(),
  balanceAfter: z.number(),
  /** TOP_UP, CHARGE, REVERSAL, GRANT. */
  type: z.string(),
  createdAt: z.string(),
  requestId: z.string().nullable(),
  modelId: z.string().nullable(),
});
export type X402Transaction = z.infer<typeof X402Transaction>;

export const X402TransactionsResponse = z.object({
  success: z.literal(true),
  data: z.object({
    walletAddress: z.string(),
    currentBalance: z.number(),
    transactions: z.array(X402Transaction),
    pagination: z.object({ limit: z.number().int(), offset: z.number().int(), hasMore: z.boolean() }),
  }),
});
export type X402TransactionsResponse = z.infer<typeof X402TransactionsResponse>;

export const X402TopUpResponse = z.object({
  success: z.literal(true),
  data: z.object({ walletAddress: z.string(), amountCredited: z.number(), newBalance: z.number(), paymentId: z.string() }),
});
export type X402TopUpResponse = z.infer<typeof X402TopUpResponse>;

/** One x402 v2 PaymentRequirements entry. */
export const PaymentOption = z.object({
  scheme: z.literal("exact"),
  network: z.string(),
  amount: z.string(),
  asset: z.string(),
  payTo: z.string(),
  maxTimeoutSeconds: z.number(),
  extra: z.record(z.string(), z.string()),
});
export type PaymentOption = z.infer<typeof PaymentOption>;

export const SiwxChallenge = z.object({
  info: z.object({
    domain: z.string(),
    uri: z.string(),
    version: z.literal("1"),
    nonce: z.string(),
    issuedAt: z.string(),
    expirationTime: z.string(),
    statement: z.string(),
  }),
  supportedChains: z.array(z.object({ chainId: z.string(), type: z.enum(["eip191", "ed25519"]) })),
});
export type SiwxChallenge = z.infer<typeof SiwxChallenge>;

/**
 * x402 v2 PaymentRequired: the top-up 402, the discovery 402 and the PAYMENT-REQUIRED header.
 * Open: the discovery answer adds `authOptions`, the wallet-insufficient answer its balance.
 */
export const PaymentRequiredResponse = z.looseObject({
  x402Version: z.literal(2),
  error: z.string(),
  resource: z.object({ url: z.string(), description: z.string(), mimeType: z.string() }),
  accepts: z.array(PaymentOption),
  extensions: z.object({ "sign-in-with-x": SiwxChallenge.extend({ schema: z.record(z.string(), z.unknown()) }) }),
});
export type PaymentRequired = z.infer<typeof PaymentRequiredResponse>;

/**
 * POST /x402/top-up's 402 body: the provider's two fields and nothing more (its schema is closed);
 * x402's whole PaymentRequired is in the PAYMENT-REQUIRED header.
 */
export const TopUpPaymentRequired = z.strictObject({ x402Version: z.literal(2), accepts: z.array(PaymentOption) });
export type TopUpPaymentRequired = z.infer<typeof TopUpPaymentRequired>;
