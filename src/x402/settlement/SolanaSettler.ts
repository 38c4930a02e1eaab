import { ed25519 } from "@noble/curves/ed25519.js";
import { base58, base64 } from "@scure/base";
import { getTransactionDecoder, getTransactionEncoder } from "@solana/kit";
import type { SolanaRail } from "../../config/walletConfig.js";
import { SettlementError } from "./SettlementError.js";

export type SolanaStatus = { state: "pending" } | { state: "confirmed" } | { state: "failed"; reason: string };

/**
 * Settles x402 Solana payments through the configured Solana JSON-RPC node: the node adds its
 * fee payer's signature to the payer's partially signed transaction, sends it, and polls its
 * status until the cluster confirms it. The instructions were checked before (offline), and a
 * Solana transaction is atomic, so "confirmed without error" means the transfer happened.
 */
export class SolanaSettler {
  private readonly seed: Uint8Array;

  constructor(private readonly rail: SolanaRail) {
    if (!rail.rpcUrl || !rail.feePayerSecretKey) throw new Error("Solana settlement needs solana.rpcUrl and the fee payer's key");
    const secret = base58.decode(rail.feePayerSecretKey);
    if (secret.length !== 64) throw new Error("solana.feePayerSecretKey must be a base58 64-byte secret key");
    this.seed = secret.slice(0, 32);
    if (base58.encode(ed25519.getPublicKey(this.seed)) !== rail.feePayer) throw new Error("solana.feePayerSecretKey is not the key of solana.feePayer");
  }

  /** Runs the transaction without its fee-payer signature (no fee): proves it would succeed now. */
  async simulate(transactionBase64: string): Promise<void> {
    let result: { value: { err: unknown } };
    try {
      result = await this.rpc("simulateTransaction", [transactionBase64, { encoding: "base64", sigVerify: false, commitment: "confirmed" }]);
    } catch (error) {
      throw new SettlementError("settlement_node_unavailable", `the Solana node could not check the transfer: ${(error as Error).message}`);
    }
    if (result.value.err) throw new SettlementError("transfer_simulation_failed", `the transfer would fail: ${JSON.stringify(result.value.err)}`);
  }

  /** Signs as fee payer and sends; returns the transaction signature (its id). */
  async submit(transactionBase64: string): Promise<string> {
    const decoded = getTransactionDecoder().decode(base64.decode(transactionBase64));
    const signature = ed25519.sign(new Uint8Array(decoded.messageBytes), this.seed);
    const signatures = { ...(decoded.signatures as Record<string, Uint8Array | null>), [this.rail.feePayer]: signature };
    const wire = getTransactionEncoder().encode({ ...decoded, signatures } as Parameters<ReturnType<typeof getTransactionEncoder>["encode"]>[0]);
    const id = base58.encode(signature);
    try {
      const sent = await this.rpc<string>("sendTransaction", [base64.encode(new Uint8Array(wire)), { encoding: "base64", preflightCommitment: "confirmed" }]);
      if (sent !== id) throw new Error(`node answered signature ${sent}, expected ${id}`);
    } catch (error) {
      throw new SettlementError("transfer_submission_failed", `the Solana node refused the transfer: ${(error as Error).message}`);
    }
    return id;
  }

  async status(id: string): Promise<SolanaStatus> {
    const result = await this.rpc<{ value: ({ err: unknown; confirmationStatus?: string } | null)[] }>("getSignatureStatuses", [[id], { searchTransactionHistory: true }]);
    const status = result.value[0];
    if (!status) return { state: "pending" };
    if (status.err) return { state: "failed", reason: `the transfer failed on chain: ${JSON.stringify(status.err)}` };
    return status.confirmationStatus === "confirmed" || status.confirmationStatus === "finalized" ? { state: "confirmed" } : { state: "pending" };
  }

  /** Polls until confirmed (or failed, or receiptTimeoutMs). */
  async confirm(id: string): Promise<void> {
    const deadline = Date.now() + this.rail.receiptTimeoutMs;
    for (;;) {
      const status = await this.status(id).catch((): SolanaStatus => ({ state: "pending" }));
      if (status.state === "confirmed") return;
      if (status.state === "failed") throw new SettlementError("transfer_failed", status.reason);
      if (Date.now() > deadline) throw new SettlementError("settlement_pending", `the transfer ${id} is not confirmed yet`);
      await new Promise((resolve) => setTimeout(resolve, 400));
    }
  }

  private async rpc<T>(method: string, params: unknown[]): Promise<T> {
    const res = await fetch(this.rail.rpcUrl!, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
      signal: AbortSignal.timeout(15_000),
    });
    const body = (await res.json()) as { result?: T; error?: { message?: string } };
    if (body.error) throw new Error(body.error.message ?? JSON.stringify(body.error));
    return body.result as T;
  }
}
