import type { WalletFamily } from "../../store/wallets.js";

/** An EIP-3009 TransferWithAuthorization, as signed (uint256 fields as bigint). */
export interface Eip3009Authorization {
  from: `0x${string}`;
  to: `0x${string}`;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: `0x${string}`;
}

/** A top-up payment that verified offline: who pays, how much, and what settling it takes. */
export interface VerifiedPayment {
  network: string;
  family: WalletFamily;
  asset: string;
  payTo: string;
  /** Normalised payer address: the wallet credited. */
  payer: string;
  /** USDC has 6 decimals, so atomic units are micro-USD. */
  amountMicros: number;
  /** The authorization's identity on its chain; the same key never credits twice. */
  idempotencyKey: string;
  /** Hash of the signed payload (tells a resend from a different authorization reusing a nonce). */
  payloadHash: string;
  /** Unix ms after which the authorization can no longer be settled. */
  validBefore: number;
  settle: { kind: "evm"; authorization: Eip3009Authorization; signature: `0x${string}` } | { kind: "solana"; transaction: string };
}

/** Limits every payment is checked against. */
export interface PaymentLimits {
  minMicros: number;
  maxMicros: number;
  maxTimeoutSeconds: number;
}
