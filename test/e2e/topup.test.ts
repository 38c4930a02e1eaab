import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { getBalances, ledgerTotals, listLedgerEntries } from "../../src/store/ledger.js";
import { findWallet } from "../../src/store/wallets.js";
import { startTestServer, type TestServer } from "../helpers/testServer.js";
import { b64json, decodeB64Json, evmPayment, evmWallet, solanaPayment, solanaWallet } from "../helpers/wallets.js";

const PAY_TO = evmWallet().address;
const BASE_USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const SOLANA_PAY_TO = solanaWallet().address;
const FEE_PAYER = solanaWallet().address;
const SOLANA_USDC = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";

/**
 * The server's clock moves 31 s ahead before each test, so the abuse guard (more than 20
 * failures in 30 s blocks the caller's IP) never carries over from one test's refusals into
 * the next. Payments are dated by the same clock.
 */
let offset = 0;
const clock = () => Date.now() + offset;
const seconds = (delta: number) => BigInt(Math.floor(clock() / 1000) + delta);
beforeEach(() => {
  offset += 31_000;
});

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({
    now: clock,
    models: [],
    config: { wallet: { x402: { settlement: "off", base: { payTo: PAY_TO }, solana: { payTo: SOLANA_PAY_TO, feePayer: FEE_PAYER } } } } as never,
  });
});
afterAll(() => server.stop());

const topUp = (headers: Record<string, string>) =>
  fetch(`${server.baseUrl}/x402/top-up`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: "{}" });
const balanceOf = (wallet: string) => {
  const record = findWallet(server.db, wallet);
  return record ? getBalances(server.db, record.accountId).USD : 0;
};
const pay = (account: ReturnType<typeof evmWallet>, overrides: Partial<Parameters<typeof evmPayment>[1]> = {}) =>
  evmPayment(account, { asset: BASE_USDC, payTo: PAY_TO, value: 5_000_000n, validBefore: seconds(240), ...overrides });

describe("POST /x402/top-up", () => {
  it("without a payment header: 402 with the requirements in the body and in PAYMENT-REQUIRED", async () => {
    const res = await topUp({});
    expect(res.status).toBe(402);
    const body = (await res.json()) as any;
    // The body: the provider's two fields only (its schema is closed); x402's whole PaymentRequired is in the header.
    expect(Object.keys(body).sort()).toEqual(["accepts", "x402Version"]);
    expect(body.x402Version).toBe(2);
    expect(body.accepts.map((a: any) => [a.network, a.amount, a.asset, a.payTo])).toEqual([
      ["eip155:8453", "5000000", BASE_USDC, PAY_TO],
      ["solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", "5000000", SOLANA_USDC, SOLANA_PAY_TO],
    ]);
    const required = decodeB64Json(res.headers.get("payment-required"));
    expect(required).toMatchObject({ x402Version: 2, accepts: body.accepts, resource: { url: `${server.url}/api/v1/x402/top-up` } });
    expect(required.extensions["sign-in-with-x"].info.domain).toBe(new URL(server.url).host);
  });

  it("credits a verified EIP-3009 payment to the payer, with PAYMENT-RESPONSE and the reference's body", async () => {
    const account = evmWallet();
    const { header } = await pay(account, { value: 12_340_000n });
    const res = await topUp({ "PAYMENT-SIGNATURE": header });
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body).toEqual({
      success: true,
      data: { walletAddress: account.address.toLowerCase(), amountCredited: 12.34, newBalance: 12.34, paymentId: expect.stringMatching(/^payment_[0-9a-f]{32}$/) },
    });
    expect(decodeB64Json(res.headers.get("payment-response"))).toEqual({
      success: true,
      network: "eip155:8453",
      payer: account.address.toLowerCase(),
      transaction: "",
      amount: "12340000",
    });
    expect(balanceOf(account.address.toLowerCase())).toBe(12_340_000);
    const ledger = listLedgerEntries(server.db, { accountId: findWallet(server.db, account.address.toLowerCase())!.accountId }).map(({ kind, deltaMicros }) => ({
      kind,
      delta_micros: deltaMicros,
    }));
    expect(ledger).toEqual([{ kind: "topup", delta_micros: 12_340_000 }]);
  });

  it("accepts the legacy X-402-Payment and X-PAYMENT headers and the v1-shaped payload (network 'base')", async () => {
    const account = evmWallet();
    expect((await topUp({ "X-402-Payment": (await pay(account, { legacy: true })).header })).status).toBe(200);
    expect((await topUp({ "X-PAYMENT": (await pay(account)).header })).status).toBe(200);
    expect(balanceOf(account.address.toLowerCase())).toBe(10_000_000);
  });

  it("credits a payment once when the same payment is sent twice concurrently (and again later)", async () => {
    const account = evmWallet();
    const { header } = await pay(account, { value: 7_000_000n });
    const results = await Promise.all(Array.from({ length: 6 }, () => topUp({ "PAYMENT-SIGNATURE": header })));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    const bodies = (await Promise.all(results.map((r) => r.json()))) as any[];
    expect(new Set(bodies.map((b) => b.data.paymentId)).size).toBe(1);
    expect(results.filter((r) => r.headers.get("idempotent-replayed") === "true")).toHaveLength(5);
    expect(balanceOf(account.address.toLowerCase())).toBe(7_000_000);
    const again = await topUp({ "PAYMENT-SIGNATURE": header });
    expect(((await again.json()) as any).data).toMatchObject({ amountCredited: 7, newBalance: 7 });
    expect(balanceOf(account.address.toLowerCase())).toBe(7_000_000);
    const wallet = findWallet(server.db, account.address.toLowerCase())!;
    expect(ledgerTotals(server.db, wallet.accountId)).toEqual(getBalances(server.db, wallet.accountId));
  });

  it("refuses a second, different authorization reusing a nonce", async () => {
    const account = evmWallet();
    const first = await pay(account);
    expect((await topUp({ "PAYMENT-SIGNATURE": first.header })).status).toBe(200);
    const second = await pay(account, { nonce: first.nonce, value: 9_000_000n });
    const res = await topUp({ "PAYMENT-SIGNATURE": second.header });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: "X402_INVALID_PAYMENT", details: { reason: "nonce_already_used" } });
    expect(balanceOf(account.address.toLowerCase())).toBe(5_000_000);
  });

  it.each([
    ["a payment below the 5 USD minimum", { value: 4_999_999n }, "invalid_exact_evm_authorization_value"],
    ["a payment to another pay-to", { payTo: evmWallet().address }, "invalid_payment_requirements"],
    ["a payment of another asset", { asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e" }, "invalid_payment_requirements"],
    ["a payment signed for another chain", { chainId: 84532, network: "eip155:8453" }, "invalid_exact_evm_signature"],
    ["a payment on a network not offered", { chainId: 1 }, "invalid_network"],
    ["a payment signed with another EIP-712 domain name", { name: "USDC" }, "invalid_exact_evm_signature"],
    ["an expired authorization", () => ({ validBefore: seconds(-1) }), "invalid_exact_evm_payload_authorization_valid_before"],
    ["an authorization valid for too long", () => ({ validBefore: seconds(86_400) }), "invalid_exact_evm_payload_authorization_valid_before"],
    ["an authorization not valid yet", () => ({ validAfter: seconds(600) }), "invalid_exact_evm_payload_authorization_valid_after"],
  ])("refuses %s", async (_name, overrides, reason) => {
    const account = evmWallet();
    const fields = typeof overrides === "function" ? overrides() : overrides;
    const res = await topUp({ "PAYMENT-SIGNATURE": (await pay(account, fields as never)).header });
    expect(res.status).toBe(400);
    const body = (await res.json()) as any;
    expect(body).toMatchObject({ error: "X402_INVALID_PAYMENT", details: { reason } });
    expect(typeof body.message).toBe("string");
    expect(balanceOf(account.address.toLowerCase())).toBe(0);
  });

  it("refuses a payment whose authorization names another recipient than the accepted pay-to", async () => {
    const account = evmWallet();
    const { header } = await pay(account, { payTo: evmWallet().address });
    const payload = decodeB64Json(header);
    payload.accepted.payTo = PAY_TO;
    const res = await topUp({ "PAYMENT-SIGNATURE": b64json(payload) });
    expect(await res.json()).toMatchObject({ details: { reason: "invalid_exact_evm_recipient_mismatch" } });
  });

  it("refuses a tampered value (the signature no longer matches) and garbage headers", async () => {
    const account = evmWallet();
    const payload = decodeB64Json((await pay(account)).header);
    payload.payload.authorization.value = "500000000";
    expect(await (await topUp({ "PAYMENT-SIGNATURE": b64json(payload) })).json()).toMatchObject({ details: { reason: "invalid_exact_evm_signature" } });
    expect((await topUp({ "PAYMENT-SIGNATURE": "!!!" })).status).toBe(400);
    expect(await (await topUp({ "PAYMENT-SIGNATURE": b64json({ x402Version: 3 }) })).json()).toMatchObject({ details: { reason: "invalid_x402_version" } });
  });

  it("credits a Solana exact payment (offline-verified TransferChecked) to its authority, once", async () => {
    const payer = solanaWallet();
    const { header } = await solanaPayment(payer, { mint: SOLANA_USDC, payTo: SOLANA_PAY_TO, feePayer: FEE_PAYER, amount: 7_500_000n });
    const [a, b] = await Promise.all([topUp({ "PAYMENT-SIGNATURE": header }), topUp({ "PAYMENT-SIGNATURE": header })]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(((await a.json()) as any).data).toMatchObject({ walletAddress: payer.address, amountCredited: 7.5 });
    expect(balanceOf(payer.address)).toBe(7_500_000);
  });

  it.each([
    ["below the minimum", { amount: 1_000_000n }, "invalid_exact_svm_payload_transaction_amount"],
    ["to another owner's token account", { payTo: solanaWallet().address }, "invalid_payment_requirements"],
    ["of another mint", { mint: solanaWallet().address }, "invalid_payment_requirements"],
    ["with another fee payer", { feePayer: solanaWallet().address }, "invalid_exact_svm_payload_transaction_fee_payer"],
    ["with a compute-unit price above the cap", { computeUnitPrice: 10_000_000n }, "invalid_exact_svm_payload_transaction_instructions_compute_price_instruction_too_high"],
  ])("refuses a Solana payment %s", async (_name, overrides, reason) => {
    const payer = solanaWallet();
    const { header } = await solanaPayment(payer, { mint: SOLANA_USDC, payTo: SOLANA_PAY_TO, feePayer: FEE_PAYER, amount: 5_000_000n, ...overrides });
    const res = await topUp({ "PAYMENT-SIGNATURE": header });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: "X402_INVALID_PAYMENT", details: { reason } });
    expect(balanceOf(payer.address)).toBe(0);
  });

  it("refuses a Solana transaction whose bytes were changed after signing", async () => {
    const payer = solanaWallet();
    const { header } = await solanaPayment(payer, { mint: SOLANA_USDC, payTo: SOLANA_PAY_TO, feePayer: FEE_PAYER, amount: 5_000_000n });
    const payload = decodeB64Json(header);
    const bytes = Buffer.from(payload.payload.transaction, "base64");
    bytes[bytes.length - 2]! ^= 1; // last byte of the memo (the very last is the v0 lookup-table count)
    payload.payload.transaction = bytes.toString("base64");
    expect(await (await topUp({ "PAYMENT-SIGNATURE": b64json(payload) })).json()).toMatchObject({ details: { reason: "invalid_exact_svm_payload_transaction_signature" } });
    payload.payload.transaction = Buffer.from("not a transaction").toString("base64");
    expect(await (await topUp({ "PAYMENT-SIGNATURE": b64json(payload) })).json()).toMatchObject({ details: { reason: "invalid_payload" } });
  });
});

describe("a node without a settlement mode", () => {
  it("answers top-ups with a clear 'not enabled' error, and its discovery 402 offers no payment", async () => {
    const plain = await startTestServer({ models: [], config: { wallet: { x402: { base: { payTo: PAY_TO } } } } as never });
    try {
      // The provider's document has no 501 here: its 402, offering nothing, and saying why.
      const res = await fetch(`${plain.baseUrl}/x402/top-up`, { method: "POST" });
      expect(res.status).toBe(402);
      // The body is the provider's (x402Version, an empty accepts); why is in PAYMENT-REQUIRED.
      expect(await res.json()).toEqual({ x402Version: 2, accepts: [] });
      expect(decodeB64Json(res.headers.get("payment-required"))).toMatchObject({
        x402Version: 2,
        error: "X402_TOPUPS_DISABLED",
        accepts: [],
        message: expect.stringMatching(/not enabled on this node/),
      });
      const withPayment = await fetch(`${plain.baseUrl}/x402/top-up`, { method: "POST", headers: { "PAYMENT-SIGNATURE": (await pay(evmWallet())).header } });
      expect(withPayment.status).toBe(402);
      expect(((await withPayment.json()) as { accepts: unknown[] }).accepts).toEqual([]);
    } finally {
      await plain.stop();
    }
  });
});
