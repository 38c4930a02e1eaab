import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { z } from "zod";
import { ConfigError, describeIssues } from "./ConfigError.js";

/**
 * The wallet section of the configuration: x402 top-ups and sign-in-with-x, and the crypto
 * RPC proxy. It lives in its own JSON file (--wallet-config / HEARTH_WALLET_CONFIG) because it
 * is structured (rails, networks); secrets may come from the environment instead (SECRET_ENV).
 * Every field is documented here and in docs/wallets.md.
 */

export const BASE_MAINNET = "eip155:8453";
export const SOLANA_MAINNET = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp";
/** USDC on Base mainnet; its EIP-712 domain is name "USD Coin", version "2". */
export const BASE_USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
/** USDC mint on Solana mainnet. */
export const SOLANA_USDC = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";

const EvmAddress = z.string().regex(/^0x[0-9a-fA-F]{40}$/, "an EVM address: 0x and 40 hex digits");
const SolanaAddress = z.string().regex(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/, "a base58 Solana address");
const PrivateKeyHex = z.string().regex(/^0x[0-9a-fA-F]{64}$/, "a private key: 0x and 64 hex digits");
const HttpUrl = z.url({ protocol: /^https?$/ });

/** USDC on an EVM chain, paid with EIP-3009 transferWithAuthorization (the x402 "exact" scheme). */
export const EvmRail = z.strictObject({
  /** CAIP-2 network; Base mainnet by default. SIWX accepts sign-ins for this chain. */
  network: z
    .string()
    .regex(/^eip155:[1-9][0-9]*$/, "a CAIP-2 EVM network such as eip155:8453")
    .default(BASE_MAINNET),
  /** The USDC contract (the EIP-712 verifyingContract). */
  asset: EvmAddress.default(BASE_USDC),
  /** The node operator's receiving address. */
  payTo: EvmAddress,
  /** The token's EIP-712 domain; never taken from the client. */
  eip712: z.strictObject({ name: z.string().min(1), version: z.string().min(1) }).default({ name: "USD Coin", version: "2" }),
  /** JSON-RPC endpoint of a node on this chain; needed for onchain and deferred settlement. */
  rpcUrl: HttpUrl.optional(),
  /** Key of the account that submits transferWithAuthorization and pays its gas (or env HEARTH_X402_EVM_SETTLER_KEY). */
  settlerPrivateKey: PrivateKeyHex.optional(),
  /** Blocks a settlement transaction must have on top of it before the top-up is credited. */
  confirmations: z.number().int().min(1).max(64).default(1),
  /** Gas limit of a settlement transaction (transferWithAuthorization needs about 60-90k). */
  gasLimit: z.number().int().min(21_000).default(200_000),
  /** How long a top-up request waits for its transfer to be mined before answering. */
  receiptTimeoutMs: z.number().int().positive().default(120_000),
});
export type EvmRail = z.infer<typeof EvmRail>;

/** USDC on Solana, paid with a partially signed TransferChecked transaction (the x402 SVM "exact" scheme). */
export const SolanaRail = z.strictObject({
  network: z
    .string()
    .regex(/^solana:[1-9A-HJ-NP-Za-km-z]{32}$/, "a CAIP-2 Solana network")
    .default(SOLANA_MAINNET),
  asset: SolanaAddress.default(SOLANA_USDC),
  /** The node operator's wallet; payments go to its associated token account for the asset. */
  payTo: SolanaAddress,
  /** The account that pays the transaction fee and signs last, at settlement. */
  feePayer: SolanaAddress,
  rpcUrl: HttpUrl.optional(),
  /** base58 64-byte secret key of feePayer (or env HEARTH_X402_SOLANA_FEE_PAYER_KEY). */
  feePayerSecretKey: z
    .string()
    .regex(/^[1-9A-HJ-NP-Za-km-z]{64,90}$/, "a base58 64-byte secret key")
    .optional(),
  /** Highest compute-unit price a payment may set (the x402 facilitator's rule is 5 lamports per CU). */
  maxComputeUnitPriceMicroLamports: z.number().int().nonnegative().default(5_000_000),
  receiptTimeoutMs: z.number().int().positive().default(60_000),
});
export type SolanaRail = z.infer<typeof SolanaRail>;

export const SettlementMode = z.enum(["onchain", "deferred", "off"]);
export type SettlementMode = z.infer<typeof SettlementMode>;

export const X402Config = z
  .strictObject({
    /**
     * onchain: submit each top-up's transfer and credit once it is mined; deferred: credit on a
     * verified signature and submit before the authorization expires; off: credit on the
     * signature alone (development only). Unset: top-ups are disabled.
     */
    settlement: SettlementMode.optional(),
    base: EvmRail.optional(),
    solana: SolanaRail.optional(),
    minimumTopUpUsd: z.number().positive().default(5),
    maximumTopUpUsd: z.number().positive().default(10_000),
    suggestedTopUpUsd: z.number().positive().default(10),
    /** A wallet below this balance gets 402 on paid endpoints. */
    minimumBalanceUsd: z.number().nonnegative().default(0.1),
    /** Longest authorization window accepted (validBefore - now), in seconds; offered as maxTimeoutSeconds. */
    maxTimeoutSeconds: z.number().int().min(30).max(86_400).default(300),
    /** Deferred mode: how often pending transfers are submitted. */
    deferredIntervalMs: z.number().int().positive().default(5_000),
    siwx: z
      .strictObject({
        /** A sign-in is valid this long after its Issued At (and never past its Expiration Time). */
        maxAgeSeconds: z.number().int().min(10).max(3_600).default(300),
        /** Tolerated clock difference with the wallet. */
        clockSkewSeconds: z.number().int().min(0).max(300).default(30),
        statement: z.string().default("Sign in to Hearth"),
      })
      .default({ maxAgeSeconds: 300, clockSkewSeconds: 30, statement: "Sign in to Hearth" }),
  })
  .superRefine((config, ctx) => {
    if (config.minimumTopUpUsd > config.maximumTopUpUsd) ctx.addIssue({ code: "custom", path: ["minimumTopUpUsd"], message: "is above maximumTopUpUsd" });
    if (config.settlement && !config.base && !config.solana) ctx.addIssue({ code: "custom", path: ["settlement"], message: "needs at least one payment rail: base and/or solana" });
    if (config.settlement === "onchain" || config.settlement === "deferred") {
      if (config.base && (!config.base.rpcUrl || !config.base.settlerPrivateKey))
        ctx.addIssue({
          code: "custom",
          path: ["base"],
          message: `${config.settlement} settlement needs base.rpcUrl and a settler key (base.settlerPrivateKey or HEARTH_X402_EVM_SETTLER_KEY)`,
        });
      if (config.solana && (!config.solana.rpcUrl || !config.solana.feePayerSecretKey))
        ctx.addIssue({
          code: "custom",
          path: ["solana"],
          message: `${config.settlement} settlement needs solana.rpcUrl and the fee payer's key (solana.feePayerSecretKey or HEARTH_X402_SOLANA_FEE_PAYER_KEY)`,
        });
    }
  });
export type X402Config = z.infer<typeof X402Config>;

export const RpcFamily = z.enum(["evm", "solana", "starknet"]);
export type RpcFamily = z.infer<typeof RpcFamily>;

export const RpcNetwork = z.strictObject({
  /** The upstream node's JSON-RPC URL (never shown to clients). */
  url: HttpUrl,
  /** Method family; guessed from the slug when absent (solana-*, starknet-*, else evm). */
  family: RpcFamily.optional(),
  /** Credits per standard call; the reference's 20 for most chains, 30 for zkSync and Solana. */
  baseCredits: z.number().int().positive().optional(),
});
export type RpcNetwork = z.infer<typeof RpcNetwork>;

export const CryptoRpcConfig = z.strictObject({
  /** USD per RPC credit (the reference's ~7e-7: a standard EVM call of 20 credits costs $0.000014). */
  pricePerCreditUsd: z.number().positive().default(7e-7),
  /** Upstream request timeout. */
  timeoutMs: z.number().int().positive().default(15_000),
  /** Largest upstream response accepted. */
  maxResponseBytes: z
    .number()
    .int()
    .positive()
    .default(10 * 1024 * 1024),
  /** How long an Idempotency-Key's response is kept. */
  idempotencyTtlHours: z.number().positive().default(24),
  /** Per caller. */
  requestsPerMinute: z.number().int().positive().default(100),
  creditsPerDay: z.number().int().positive().default(10_000_000),
  /** Network slug (as in POST /crypto/rpc/{network}) -> upstream node. */
  networks: z.record(z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/, "slugs use lower-case letters, digits and '-'"), RpcNetwork).default({}),
});
export type CryptoRpcConfig = z.infer<typeof CryptoRpcConfig>;

/**
 * API keys for wallets (GET/POST /api_keys/generate_web3_key): a wallet signs a token from this
 * node and gets a key for its account. Which wallets may: `credit` (those with credit here: the
 * default, so a stranger cannot make accounts), `any` (any wallet that signs), `allowlist`
 * (the listed addresses only), `none` (off).
 */
export const Web3KeysConfig = z.strictObject({
  allow: z.enum(["none", "any", "credit", "allowlist"]).default("credit"),
  allowlist: z.array(EvmAddress).default([]),
  /** Whether a wallet may make an ADMIN key (which manages its account's keys); INFERENCE keys always. */
  allowAdminKeys: z.boolean().default(false),
  /** How long a token may wait for its signature. */
  tokenTtlSeconds: z.number().int().min(30).max(3_600).default(300),
});
export type Web3KeysConfig = z.infer<typeof Web3KeysConfig>;

export const WalletConfig = z.strictObject({
  $schema: z.string().optional(),
  x402: X402Config.default(X402Config.parse({})),
  rpc: CryptoRpcConfig.default(CryptoRpcConfig.parse({})),
  web3Keys: Web3KeysConfig.default(Web3KeysConfig.parse({})),
});
export type WalletConfig = z.infer<typeof WalletConfig>;

/** Secrets read from the environment only (never flags: they would show in the process list). */
export const SECRET_ENV = {
  evmSettlerKey: "HEARTH_X402_EVM_SETTLER_KEY",
  solanaFeePayerKey: "HEARTH_X402_SOLANA_FEE_PAYER_KEY",
} as const;

/** What each secret is, for docs/configuration.md. */
export const SECRET_ENV_DESCRIPTIONS: Record<keyof typeof SECRET_ENV, string> = {
  evmSettlerKey: "private key (0x + 64 hex) of the account that submits Base transfers and pays their gas; overrides x402.base.settlerPrivateKey",
  solanaFeePayerKey: "base58 secret key of x402.solana.feePayer; overrides x402.solana.feePayerSecretKey",
};

/** The wallet config file (if any), with the settlement override and the secrets from the environment. */
export function loadWalletConfig(path: string, settlement: string, env: Record<string, string | undefined> = process.env): WalletConfig {
  // biome-ignore lint/suspicious/noExplicitAny: the file's JSON before zod validates it
  let json: Record<string, any> = {};
  if (path) {
    try {
      // biome-ignore lint/suspicious/noExplicitAny: the file's JSON before zod validates it
      json = JSON.parse(readFileSync(resolve(path), "utf8")) as Record<string, any>;
    } catch (error) {
      throw new ConfigError(`${path}: ${(error as Error).message}`);
    }
    if (typeof json !== "object" || json === null || Array.isArray(json)) throw new ConfigError(`${path}: expected a JSON object`);
  }
  // biome-ignore lint/suspicious/noExplicitAny: the file's JSON before zod validates it
  const x402 = { ...(json.x402 as Record<string, any> | undefined) };
  if (settlement) {
    const mode = SettlementMode.safeParse(settlement);
    if (!mode.success) throw new ConfigError(`settings: x402Settlement: expected onchain, deferred or off, got "${settlement}"`);
    x402.settlement = mode.data;
  }
  const evmKey = env[SECRET_ENV.evmSettlerKey];
  if (evmKey && x402.base && typeof x402.base === "object") x402.base = { ...x402.base, settlerPrivateKey: evmKey };
  const solanaKey = env[SECRET_ENV.solanaFeePayerKey];
  if (solanaKey && x402.solana && typeof x402.solana === "object") x402.solana = { ...x402.solana, feePayerSecretKey: solanaKey };
  const parsed = WalletConfig.safeParse({ ...json, x402 });
  if (!parsed.success) throw new ConfigError(describeIssues(path || "wallet config", parsed.error));
  return parsed.data;
}
