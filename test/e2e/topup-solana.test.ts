import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { ed25519 } from "@noble/curves/ed25519.js";
import { base58, base64 } from "@scure/base";
import { getCompiledTransactionMessageDecoder, getTransactionDecoder } from "@solana/kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getBalances } from "../../src/store/ledger.js";
import { findWallet } from "../../src/store/wallets.js";
import { startTestServer, type TestServer } from "../helpers/testServer.js";
import { decodeB64Json, solanaPayment, solanaWallet } from "../helpers/wallets.js";
import { listPayments } from "../../src/store/x402Payments.js";

/**
 * Onchain settlement of Solana payments against a loopback JSON-RPC peer that stands in for a
 * validator: it accepts a transaction only when every required signature is present and valid
 * (so the node must add a correct fee-payer signature to the payer's bytes), and reports its
 * status as a cluster would. There is no Solana validator in the test environment, so the
 * transfer itself is not executed; the peer can be told to report it failed.
 */
const SOLANA_USDC = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";
const PAY_TO = solanaWallet().address;
const feePayer = solanaWallet();
const feePayerSecret = base58.encode(new Uint8Array([...feePayer.secretKey, ...feePayer.publicKey]));

let peer: Server;
let rpcUrl: string;
let server: TestServer;
const accepted = new Map<string, { statusCalls: number }>();
let failNext = false;
const failing = new Set<string>();

beforeAll(async () => {
  peer = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      const call = JSON.parse(body) as { id: number; method: string; params: any[] };
      const reply = (payload: object) => res.end(JSON.stringify({ jsonrpc: "2.0", id: call.id, ...payload }));
      if (call.method === "sendTransaction") {
        const tx = getTransactionDecoder().decode(base64.decode(call.params[0]));
        const message = getCompiledTransactionMessageDecoder().decode(tx.messageBytes);
        const signers = (message.staticAccounts as string[]).slice(0, message.header.numSignerAccounts);
        const signatures = tx.signatures as Record<string, Uint8Array | null>;
        for (const signer of signers) {
          const signature = signatures[signer];
          if (!signature || !ed25519.verify(new Uint8Array(signature), new Uint8Array(tx.messageBytes), base58.decode(signer))) {
            return reply({ error: { code: -32003, message: `Transaction signature verification failure (${signer})` } });
          }
        }
        const id = base58.encode(new Uint8Array(signatures[signers[0]!]!));
        accepted.set(id, { statusCalls: 0 });
        if (failNext) failing.add(id);
        failNext = false;
        return reply({ result: id });
      }
      if (call.method === "simulateTransaction") {
        const err = failNext ? { InstructionError: [2, { Custom: 1 }] } : null;
        failNext = false;
        return reply({ result: { context: { slot: 1 }, value: { err, logs: [] } } });
      }
      if (call.method === "getSignatureStatuses") {
        const id = call.params[0][0] as string;
        const known = accepted.get(id);
        if (!known) return reply({ result: { context: { slot: 1 }, value: [null] } });
        known.statusCalls++;
        // Processed first, confirmed on a later poll, like a cluster.
        const status =
          known.statusCalls < 2
            ? { slot: 1, confirmations: 0, err: null, confirmationStatus: "processed" }
            : { slot: 1, confirmations: 1, err: failing.has(id) ? { InstructionError: [2, { Custom: 1 }] } : null, confirmationStatus: "confirmed" };
        return reply({ result: { context: { slot: 2 }, value: [status] } });
      }
      reply({ error: { code: -32601, message: "Method not found" } });
    });
  });
  await new Promise<void>((resolve) => peer.listen(0, "127.0.0.1", resolve));
  rpcUrl = `http://127.0.0.1:${(peer.address() as AddressInfo).port}`;
  server = await startTestServer({
    models: [],
    config: {
      wallet: { x402: { settlement: "onchain", solana: { payTo: PAY_TO, feePayer: feePayer.address, rpcUrl, feePayerSecretKey: feePayerSecret } } },
    } as never,
  });
});
afterAll(async () => {
  await server?.stop();
  peer?.closeAllConnections();
  await new Promise((r) => peer?.close(r));
});

const topUp = (header: string) => fetch(`${server.baseUrl}/x402/top-up`, { method: "POST", headers: { "PAYMENT-SIGNATURE": header } });
const balanceOf = (wallet: string) => {
  const record = findWallet(server.db, wallet);
  return record ? getBalances(server.db, record.accountId).USD : 0;
};

describe("onchain settlement of Solana payments", () => {
  it("co-signs as fee payer, sends, waits for confirmation, then credits; the transaction id is in PAYMENT-RESPONSE", async () => {
    const payer = solanaWallet();
    const { header } = await solanaPayment(payer, { mint: SOLANA_USDC, payTo: PAY_TO, feePayer: feePayer.address, amount: 5_500_000n });
    const res = await topUp(header);
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).data).toMatchObject({ walletAddress: payer.address, amountCredited: 5.5 });
    const settled = decodeB64Json(res.headers.get("payment-response"));
    expect(settled).toMatchObject({ success: true, network: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", payer: payer.address });
    expect(accepted.get(settled.transaction)?.statusCalls).toBeGreaterThanOrEqual(2);
    expect(balanceOf(payer.address)).toBe(5_500_000);
  });

  it("credits nothing when the cluster reports the transfer failed", async () => {
    const payer = solanaWallet();
    const { header } = await solanaPayment(payer, { mint: SOLANA_USDC, payTo: PAY_TO, feePayer: feePayer.address, amount: 5_000_000n });
    failNext = true;
    const res = await topUp(header);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: "PAYMENT_VERIFICATION_FAILED", details: { reason: "transfer_failed" } });
    expect(balanceOf(payer.address)).toBe(0);
  });
});

describe("deferred settlement of Solana payments", () => {
  it("checks the transfer by simulation, credits at once, then sends and confirms it in the background", async () => {
    const deferred = await startTestServer({
      models: [],
      config: {
        wallet: {
          x402: { settlement: "deferred", deferredIntervalMs: 3_600_000, solana: { payTo: PAY_TO, feePayer: feePayer.address, rpcUrl, feePayerSecretKey: feePayerSecret } },
        },
      } as never,
    });
    try {
      const payer = solanaWallet();
      const { header } = await solanaPayment(payer, { mint: SOLANA_USDC, payTo: PAY_TO, feePayer: feePayer.address, amount: 6_000_000n });
      const res = await fetch(`${deferred.baseUrl}/x402/top-up`, { method: "POST", headers: { "PAYMENT-SIGNATURE": header } });
      expect(res.status).toBe(200);
      const record = findWallet(deferred.db, payer.address)!;
      expect(getBalances(deferred.db, record.accountId).USD).toBe(6_000_000);
      for (let i = 0; i < 4; i++) await deferred.wallet.topUps.settlePending();
      const row = listPayments(deferred.db)[0]!;
      expect(row.settlement).toBe("confirmed");
      expect(accepted.has(row.tx_hash!)).toBe(true);

      const refused = solanaWallet();
      failNext = true;
      const bad = await solanaPayment(refused, { mint: SOLANA_USDC, payTo: PAY_TO, feePayer: feePayer.address, amount: 6_000_000n });
      const badRes = await fetch(`${deferred.baseUrl}/x402/top-up`, { method: "POST", headers: { "PAYMENT-SIGNATURE": bad.header } });
      expect(badRes.status).toBe(400);
      expect(await badRes.json()).toMatchObject({ error: "PAYMENT_VERIFICATION_FAILED", details: { reason: "transfer_simulation_failed" } });
      expect(findWallet(deferred.db, refused.address)).toBeUndefined();
    } finally {
      await deferred.stop();
    }
  });
});
