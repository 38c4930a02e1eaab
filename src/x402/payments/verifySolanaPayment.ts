import { createHash } from "node:crypto";
import { ed25519 } from "@noble/curves/ed25519.js";
import { base58, base64 } from "@scure/base";
import { address, getCompiledTransactionMessageDecoder, getTransactionDecoder } from "@solana/kit";
import { findAssociatedTokenPda } from "@solana-program/token";
import { z } from "zod";
import { X402Error } from "../../errors.js";
import type { SolanaRail } from "../../config/walletConfig.js";
import type { PaymentLimits, VerifiedPayment } from "./types.js";

export const COMPUTE_BUDGET_PROGRAM = "ComputeBudget111111111111111111111111111111";
export const TOKEN_PROGRAM = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
export const TOKEN_2022_PROGRAM = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb";
export const MEMO_PROGRAM = "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr";
export const LIGHTHOUSE_PROGRAM = "L2TExMFKdjpN9kozasaurPirfHy9P8sbXoAN1qA3S95";

/** Solana's packet limit: a transaction larger than this cannot be sent. */
const MAX_TRANSACTION_BYTES = 1232;
const TRANSFER_CHECKED = 12;
const SET_COMPUTE_UNIT_LIMIT = 2;
const SET_COMPUTE_UNIT_PRICE = 3;

const SvmExactPayload = z.object({
  transaction: z
    .string()
    .min(1)
    .max(4 * MAX_TRANSACTION_BYTES),
});

const invalid = (reason: string, message: string) => new X402Error(400, "X402_INVALID_PAYMENT", message, reason);

interface DecodedInstruction {
  program: string;
  accounts: string[];
  accountIndices: number[];
  data: Uint8Array;
}

/**
 * Verifies an x402 "exact" Solana payload offline: a partially signed transaction whose fee
 * payer is this node's feePayer (left unsigned), with the instruction layout x402 facilitators
 * require (compute-unit limit, compute-unit price within the cap, one TransferChecked of the
 * configured USDC mint, 6 decimals, into payTo's associated token account, then optional memo
 * or Lighthouse instructions), signed by the transfer's authority (the wallet credited).
 */
export async function verifySolanaPayment(payload: unknown, rail: SolanaRail, limits: PaymentLimits, nowMs: number): Promise<VerifiedPayment> {
  const parsed = SvmExactPayload.safeParse(payload);
  if (!parsed.success) throw invalid("invalid_payload", "Invalid payment header: payload must be { transaction: <base64 wire transaction> }");
  let wire: Uint8Array;
  let transaction: ReturnType<ReturnType<typeof getTransactionDecoder>["decode"]>;
  let message: ReturnType<ReturnType<typeof getCompiledTransactionMessageDecoder>["decode"]>;
  try {
    wire = base64.decode(parsed.data.transaction);
    if (wire.length > MAX_TRANSACTION_BYTES) throw new Error("too large");
    transaction = getTransactionDecoder().decode(wire);
    message = getCompiledTransactionMessageDecoder().decode(transaction.messageBytes);
  } catch {
    throw invalid("invalid_payload", "Invalid payment header: the transaction does not decode");
  }
  if ("addressTableLookups" in message && (message.addressTableLookups?.length ?? 0) > 0) {
    throw invalid("invalid_exact_svm_payload_transaction", "Invalid payment header: address lookup tables are not supported");
  }
  const accounts = message.staticAccounts as string[];
  if (accounts[0] !== rail.feePayer) throw invalid("invalid_exact_svm_payload_transaction_fee_payer", `Invalid payment header: the fee payer must be ${rail.feePayer}`);
  const instructions: DecodedInstruction[] = (message.instructions ?? []).map((ix) => {
    const indices = [...(ix.accountIndices ?? [])];
    return {
      program: accounts[ix.programAddressIndex] ?? "",
      accounts: indices.map((i) => accounts[i] ?? ""),
      accountIndices: indices,
      data: new Uint8Array(ix.data ?? new Uint8Array()),
    };
  });
  if (instructions.length < 3 || instructions.length > 6) {
    throw invalid(
      "invalid_exact_svm_payload_transaction_instructions_length",
      "Invalid payment header: expected compute-unit limit, compute-unit price, TransferChecked and at most 3 memo/Lighthouse instructions",
    );
  }
  const [limitIx, priceIx, transferIx, ...rest] = instructions as [DecodedInstruction, DecodedInstruction, DecodedInstruction, ...DecodedInstruction[]];
  if (limitIx.program !== COMPUTE_BUDGET_PROGRAM || limitIx.data[0] !== SET_COMPUTE_UNIT_LIMIT || limitIx.data.length !== 5) {
    throw invalid("invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction", "Invalid payment header: the first instruction must set the compute-unit limit");
  }
  if (priceIx.program !== COMPUTE_BUDGET_PROGRAM || priceIx.data[0] !== SET_COMPUTE_UNIT_PRICE || priceIx.data.length !== 9) {
    throw invalid("invalid_exact_svm_payload_transaction_instructions_compute_price_instruction", "Invalid payment header: the second instruction must set the compute-unit price");
  }
  const price = new DataView(priceIx.data.buffer, priceIx.data.byteOffset + 1, 8).getBigUint64(0, true);
  if (price > BigInt(rail.maxComputeUnitPriceMicroLamports)) {
    throw invalid("invalid_exact_svm_payload_transaction_instructions_compute_price_instruction_too_high", "Invalid payment header: the compute-unit price is above the cap");
  }
  if (
    (transferIx.program !== TOKEN_PROGRAM && transferIx.program !== TOKEN_2022_PROGRAM) ||
    transferIx.data[0] !== TRANSFER_CHECKED ||
    transferIx.data.length !== 10 ||
    transferIx.accounts.length < 4
  ) {
    throw invalid("invalid_exact_svm_payload_transaction_instructions", "Invalid payment header: the third instruction must be an SPL Token TransferChecked");
  }
  for (const ix of rest) {
    if (ix.program !== MEMO_PROGRAM && ix.program !== LIGHTHOUSE_PROGRAM) {
      throw invalid("invalid_exact_svm_payload_transaction_instructions", "Invalid payment header: only memo or Lighthouse instructions may follow the transfer");
    }
  }
  // The fee payer signs for the node: it must not be an account of any instruction.
  if (instructions.some((ix) => ix.accountIndices.includes(0))) {
    throw invalid("invalid_exact_svm_payload_transaction_fee_payer_included_in_instruction_accounts", "Invalid payment header: the fee payer must not appear in any instruction");
  }

  const [, mint, destination, authority] = transferIx.accounts as [string, string, string, string];
  const amount = new DataView(transferIx.data.buffer, transferIx.data.byteOffset + 1, 8).getBigUint64(0, true);
  const decimals = transferIx.data[9];
  if (mint !== rail.asset) throw invalid("invalid_exact_svm_payload_transaction_mint", `Invalid payment header: the mint must be ${rail.asset}`);
  if (decimals !== 6) throw invalid("invalid_exact_svm_payload_transaction_decimals", "Invalid payment header: USDC has 6 decimals");
  const [expectedDestination] = await findAssociatedTokenPda({ owner: address(rail.payTo), mint: address(rail.asset), tokenProgram: address(transferIx.program) });
  if (destination !== expectedDestination) {
    throw invalid("invalid_exact_svm_payload_transaction_recipient_mismatch", `Invalid payment header: the transfer must go to ${rail.payTo}'s token account`);
  }
  if (amount < BigInt(limits.minMicros))
    throw invalid("invalid_exact_svm_payload_transaction_amount", `Invalid payment header: the minimum top-up is ${limits.minMicros / 1e6} USD`);
  if (amount > BigInt(limits.maxMicros))
    throw invalid("invalid_exact_svm_payload_transaction_amount", `Invalid payment header: the maximum top-up is ${limits.maxMicros / 1e6} USD`);

  const authorityIndex = transferIx.accountIndices[3]!;
  if (authority === rail.feePayer || authorityIndex >= message.header.numSignerAccounts) {
    throw invalid("invalid_exact_svm_payload_transaction_authority", "Invalid payment header: the transfer's authority must sign the transaction");
  }
  const signature = (transaction.signatures as Record<string, Uint8Array | null>)[authority];
  const valid = signature ? ed25519.verify(new Uint8Array(signature), new Uint8Array(transaction.messageBytes), base58.decode(authority), { zip215: false }) : false;
  if (!valid) throw invalid("invalid_exact_svm_payload_transaction_signature", "Invalid payment header: the authority's signature does not verify");

  return {
    network: rail.network,
    family: "solana",
    asset: rail.asset,
    payTo: rail.payTo,
    payer: authority,
    amountMicros: Number(amount),
    // The payer's signature covers the whole message (blockhash, memo, amounts): one payment, one key.
    idempotencyKey: `${rail.network}:${base58.encode(new Uint8Array(signature!))}`,
    payloadHash: createHash("sha256").update(wire).digest("hex"),
    // A blockhash lives about 60-90 s; the node settles well within the offered timeout.
    validBefore: nowMs + limits.maxTimeoutSeconds * 1000,
    settle: { kind: "solana", transaction: parsed.data.transaction },
  };
}
