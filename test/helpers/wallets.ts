import { randomBytes } from "node:crypto";
import { ed25519 } from "@noble/curves/ed25519.js";
import { base58, base64 } from "@scure/base";
import {
  appendTransactionMessageInstructions,
  address,
  blockhash,
  compileTransaction,
  createNoopSigner,
  createTransactionMessage,
  getTransactionEncoder,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  type Instruction,
} from "@solana/kit";
import { findAssociatedTokenPda, getTransferCheckedInstruction, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { createSiweMessage } from "viem/siwe";
import { TRANSFER_WITH_AUTHORIZATION_TYPES } from "../../src/x402/payments/verifyEvmPayment.js";
import { COMPUTE_BUDGET_PROGRAM, MEMO_PROGRAM } from "../../src/x402/payments/verifySolanaPayment.js";

/**
 * Real wallets for tests: EVM accounts from viem (EIP-191 sign-ins, EIP-712 payments) and
 * Ed25519 key pairs from @noble/curves (Solana sign-ins and payments). Nothing is faked: the
 * server verifies these signatures exactly as it would a wallet's.
 */

export const b64json = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64");

export const evmWallet = (key = generatePrivateKey()) => privateKeyToAccount(key);

export interface SolanaWallet {
  address: string;
  secretKey: Uint8Array;
  publicKey: Uint8Array;
}

export function solanaWallet(): SolanaWallet {
  const { secretKey, publicKey } = ed25519.keygen();
  return { address: base58.encode(publicKey), secretKey, publicKey };
}

export interface SignInFields {
  /** host[:port] of the node. */
  domain: string;
  uri?: string;
  chainId?: number;
  nonce?: string;
  issuedAt?: Date;
  expirationTime?: Date;
  statement?: string;
}

const nonce = () => randomBytes(8).toString("hex");

/** The EIP-4361 text and the provider-style SIGN-IN-WITH-X header for it. */
export async function evmSignIn(account: PrivateKeyAccount, fields: SignInFields, tamper?: (message: string) => string) {
  const issuedAt = fields.issuedAt ?? new Date();
  const message = createSiweMessage({
    address: account.address,
    chainId: fields.chainId ?? 8453,
    domain: fields.domain,
    nonce: fields.nonce ?? nonce(),
    uri: fields.uri ?? `http://${fields.domain}`,
    version: "1",
    statement: fields.statement ?? "Sign in to Hearth",
    issuedAt,
    expirationTime: fields.expirationTime ?? new Date(issuedAt.getTime() + 5 * 60_000),
  });
  const signature = await account.signMessage({ message });
  const sent = tamper ? tamper(message) : message;
  return b64json({ address: account.address, message: sent, signature, timestamp: Date.now(), chainId: fields.chainId ?? 8453 });
}

export const SOLANA_MAINNET_REF = "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp";

/** A Solana sign-in (raw Ed25519 over the text), signature in base58 unless asked for base64. */
export function solanaSignIn(wallet: SolanaWallet, fields: SignInFields & { chainRef?: string; encoding?: "base58" | "base64" }) {
  const issuedAt = fields.issuedAt ?? new Date();
  const expiration = fields.expirationTime ?? new Date(issuedAt.getTime() + 5 * 60_000);
  const chainRef = fields.chainRef ?? SOLANA_MAINNET_REF;
  const message = [
    `${fields.domain} wants you to sign in with your Solana account:`,
    wallet.address,
    "",
    fields.statement ?? "Sign in to Hearth",
    "",
    `URI: ${fields.uri ?? `http://${fields.domain}`}`,
    "Version: 1",
    `Chain ID: ${chainRef}`,
    `Nonce: ${fields.nonce ?? nonce()}`,
    `Issued At: ${issuedAt.toISOString()}`,
    `Expiration Time: ${expiration.toISOString()}`,
  ].join("\n");
  const signature = ed25519.sign(new TextEncoder().encode(message), wallet.secretKey);
  const encoded = fields.encoding === "base64" ? base64.encode(signature) : base58.encode(signature);
  return b64json({ address: wallet.address, message, signature: encoded, timestamp: Date.now(), chainId: `solana:${chainRef}`, type: "ed25519" });
}

export interface EvmPaymentOptions {
  network?: string;
  chainId?: number;
  asset: string;
  payTo: string;
  /** Atomic units (6 decimals). */
  value: bigint;
  name?: string;
  version?: string;
  validAfter?: bigint;
  validBefore?: bigint;
  nonce?: `0x${string}`;
  /** v1-shaped payload ({x402Version, scheme, network: "base", payload}) as legacy clients send it. */
  legacy?: boolean;
}

/** An x402 v2 PaymentPayload with an EIP-3009 authorization signed (EIP-712) by `account`. */
export async function evmPayment(account: PrivateKeyAccount, o: EvmPaymentOptions) {
  const now = BigInt(Math.floor(Date.now() / 1000));
  const chainId = o.chainId ?? 8453;
  const authorization = {
    from: account.address,
    to: o.payTo as `0x${string}`,
    value: o.value,
    validAfter: o.validAfter ?? 0n,
    validBefore: o.validBefore ?? now + 240n,
    nonce: o.nonce ?? (`0x${randomBytes(32).toString("hex")}` as `0x${string}`),
  };
  const signature = await account.signTypedData({
    domain: { name: o.name ?? "USD Coin", version: o.version ?? "2", chainId, verifyingContract: o.asset as `0x${string}` },
    types: TRANSFER_WITH_AUTHORIZATION_TYPES,
    primaryType: "TransferWithAuthorization",
    message: authorization,
  });
  const payload = {
    signature,
    authorization: {
      from: authorization.from,
      to: authorization.to,
      value: String(authorization.value),
      validAfter: String(authorization.validAfter),
      validBefore: String(authorization.validBefore),
      nonce: authorization.nonce,
    },
  };
  const network = o.network ?? `eip155:${chainId}`;
  if (o.legacy) return { header: b64json({ x402Version: 2, scheme: "exact", network: "base", payload }), nonce: authorization.nonce };
  const accepted = {
    scheme: "exact",
    network,
    amount: "5000000",
    asset: o.asset,
    payTo: o.payTo,
    maxTimeoutSeconds: 300,
    extra: { name: o.name ?? "USD Coin", version: o.version ?? "2" },
  };
  return { header: b64json({ x402Version: 2, resource: { url: "http://node/api/v1/x402/top-up" }, accepted, payload }), nonce: authorization.nonce };
}

export interface SolanaPaymentOptions {
  mint: string;
  payTo: string;
  feePayer: string;
  /** Atomic units (6 decimals). */
  amount: bigint;
  computeUnitPrice?: bigint;
}

/** An x402 SVM exact payload: compute budget, TransferChecked and a memo, signed by the payer only. */
export async function solanaPayment(payer: SolanaWallet, o: SolanaPaymentOptions) {
  const mint = address(o.mint);
  const owner = address(payer.address);
  const [source] = await findAssociatedTokenPda({ owner, mint, tokenProgram: TOKEN_PROGRAM_ADDRESS });
  const [destination] = await findAssociatedTokenPda({ owner: address(o.payTo), mint, tokenProgram: TOKEN_PROGRAM_ADDRESS });
  const u32 = (n: number) => new Uint8Array(new Uint32Array([n]).buffer);
  const u64 = (n: bigint) => new Uint8Array(new BigUint64Array([n]).buffer);
  const computeLimit: Instruction = { programAddress: address(COMPUTE_BUDGET_PROGRAM), data: new Uint8Array([2, ...u32(20_000)]) };
  const computePrice: Instruction = { programAddress: address(COMPUTE_BUDGET_PROGRAM), data: new Uint8Array([3, ...u64(o.computeUnitPrice ?? 1n)]) };
  const memo: Instruction = { programAddress: address(MEMO_PROGRAM), data: new TextEncoder().encode(randomBytes(16).toString("hex")) };
  const transfer = getTransferCheckedInstruction({ source, mint, destination, authority: createNoopSigner(owner), amount: o.amount, decimals: 6 });
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayer(address(o.feePayer), m),
    (m) => setTransactionMessageLifetimeUsingBlockhash({ blockhash: blockhash(base58.encode(randomBytes(32))), lastValidBlockHeight: 1_000n }, m),
    (m) => appendTransactionMessageInstructions([computeLimit, computePrice, transfer, memo], m),
  );
  const compiled = compileTransaction(message);
  const signature = ed25519.sign(new Uint8Array(compiled.messageBytes), payer.secretKey);
  const signed = { ...compiled, signatures: { ...compiled.signatures, [owner]: signature } };
  const transaction = base64.encode(new Uint8Array(getTransactionEncoder().encode(signed as never)));
  const accepted = {
    scheme: "exact",
    network: `solana:${SOLANA_MAINNET_REF}`,
    amount: "5000000",
    asset: o.mint,
    payTo: o.payTo,
    maxTimeoutSeconds: 300,
    extra: { feePayer: o.feePayer },
  };
  return { header: b64json({ x402Version: 2, accepted, payload: { transaction } }), signature: base58.encode(signature) };
}

export const decodeB64Json = <T = any>(value: string | null): T => JSON.parse(Buffer.from(value ?? "", "base64").toString("utf8")) as T;
