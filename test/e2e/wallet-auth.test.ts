import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getBalances, ledgerTotals } from "../../src/store/ledger.js";
import { findWallet } from "../../src/store/wallets.js";
import { post, startTestServer, tinyChatEntry, type TestServer } from "../helpers/testServer.js";
import { decodeB64Json, evmPayment, evmSignIn, evmWallet, solanaPayment, solanaSignIn, solanaWallet, type SignInFields } from "../helpers/wallets.js";
import { getAccount } from "../../src/store/accounts.js";

/** $1 per million input tokens, $2 per million output tokens (the credits tests' prices). */
const PRICED = { pricing: { input: { usd: 1, diem: 1 }, output: { usd: 2, diem: 2 } } };
const PAY_TO = evmWallet().address;
const BASE_USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const SOLANA_PAY_TO = solanaWallet().address;
const FEE_PAYER = solanaWallet().address;
const SOLANA_USDC = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";

let server: TestServer;
let domain: string;
beforeAll(async () => {
  server = await startTestServer({
    models: [tinyChatEntry(PRICED), tinyChatEntry({ id: "pricey-chat", pricing: { input: { usd: 1, diem: 1 }, output: { usd: 100_000, diem: 100_000 } } })],
    config: {
      wallet: {
        x402: {
          settlement: "off",
          base: { payTo: PAY_TO },
          solana: { payTo: SOLANA_PAY_TO, feePayer: FEE_PAYER },
        },
      },
    } as never,
  });
  domain = new URL(server.url).host;
});
afterAll(() => server.stop());

const ask = (extra: Record<string, unknown> = {}) => ({ model: "tiny-chat", messages: [{ role: "user", content: "Hello" }], max_tokens: 4, temperature: 0, ...extra });
const signIn = (account = evmWallet(), fields: Partial<SignInFields> = {}, tamper?: (m: string) => string) => evmSignIn(account, { domain, ...fields }, tamper);
const chatAs = (header: string, body: unknown = ask(), name = "SIGN-IN-WITH-X") => post(server, "/chat/completions", body, { key: null, headers: { [name]: header } });

async function topUp(header: string) {
  return fetch(`${server.baseUrl}/x402/top-up`, { method: "POST", headers: { "PAYMENT-SIGNATURE": header } });
}

/** A wallet with `usd` of credit, paid through the real top-up endpoint (settlement off). */
async function fundedWallet(usd = 5) {
  const account = evmWallet();
  const { header } = await evmPayment(account, { asset: BASE_USDC, payTo: PAY_TO, value: BigInt(usd * 1e6) });
  expect((await topUp(header)).status).toBe(200);
  return account;
}

describe("no credentials on a paid endpoint: the x402 discovery 402", () => {
  it("answers with the payment requirements, the sign-in challenge and the auth options, also in PAYMENT-REQUIRED", async () => {
    const res = await post(server, "/chat/completions", ask(), { key: null });
    expect(res.status).toBe(402);
    const body = (await res.json()) as any;
    expect(body.x402Version).toBe(2);
    expect(body.resource).toEqual({ url: `${server.url}/api/v1/chat/completions`, description: "Hearth API", mimeType: "application/json" });
    expect(body.accepts).toEqual([
      { scheme: "exact", network: "eip155:8453", amount: "5000000", asset: BASE_USDC, payTo: PAY_TO, maxTimeoutSeconds: 300, extra: { name: "USD Coin", version: "2" } },
      {
        scheme: "exact",
        network: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp",
        amount: "5000000",
        asset: SOLANA_USDC,
        payTo: SOLANA_PAY_TO,
        maxTimeoutSeconds: 300,
        extra: { feePayer: FEE_PAYER },
      },
    ]);
    const siwx = body.extensions["sign-in-with-x"];
    expect(siwx.info).toMatchObject({ domain, uri: `${server.url}/api/v1/chat/completions`, version: "1" });
    expect(siwx.info.nonce).toMatch(/^[0-9a-f]{32}$/);
    expect(siwx.supportedChains).toEqual([
      { chainId: "eip155:8453", type: "eip191" },
      { chainId: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", type: "ed25519" },
    ]);
    expect(body.authOptions.x402Wallet).toMatchObject({ header: "SIGN-IN-WITH-X", legacyHeader: "X-Sign-In-With-X", topUp: "POST /api/v1/x402/top-up" });
    expect(body.authOptions.apiKey.header).toBe("Authorization: Bearer YOUR_API_KEY");
    const required = decodeB64Json(res.headers.get("payment-required"));
    expect(required).toMatchObject({ x402Version: 2, resource: body.resource, accepts: body.accepts });
    expect(required.authOptions).toBeUndefined();
  });

  it("an invalid key is still a 401, not a 402", async () => {
    expect((await post(server, "/chat/completions", ask(), { key: "hth_nope" })).status).toBe(401);
  });
});

describe("sign-in-with-x on chat", () => {
  it("a valid EVM sign-in is accepted: the wallet's own account pays, X-Balance-Remaining reports what is left", async () => {
    const account = await fundedWallet(5);
    const res = await chatAs(await signIn(account));
    expect(res.status).toBe(200);
    const body = (await res.json()) as { cost: { usd: number } };
    const wallet = findWallet(server.db, account.address.toLowerCase())!;
    const balance = getBalances(server.db, wallet.accountId).USD;
    expect(balance).toBe(5_000_000 - Math.round(body.cost.usd * 1e6));
    expect(res.headers.get("x-balance-remaining")).toBe((balance / 1e6).toFixed(6));
    expect(res.headers.get("x-service-balance-usd")).toBe("5.000000");
    expect(ledgerTotals(server.db, wallet.accountId)).toEqual(getBalances(server.db, wallet.accountId));
    expect(getAccount(server.db, wallet.accountId)).toMatchObject({ kind: "wallet", name: account.address.toLowerCase() });
  });

  it("accepts the legacy X-Sign-In-With-X header and streams", async () => {
    const account = await fundedWallet(5);
    const res = await chatAs(await signIn(account), ask({ stream: true }), "X-Sign-In-With-X");
    expect(res.status).toBe(200);
    expect(res.headers.get("x-balance-remaining")).toMatch(/^\d+\.\d{6}$/);
    expect(await res.text()).toContain("data: [DONE]");
  });

  it.each([
    ["a tampered message", (a: ReturnType<typeof evmWallet>) => signIn(a, {}, (m) => m.replace("Sign in to Hearth", "Sign in to Hearth and pay"))],
    ["a sign-in for another domain", (a: ReturnType<typeof evmWallet>) => signIn(a, { domain: "api.example.com", uri: "https://api.example.com" })],
    ["a sign-in for another chain", (a: ReturnType<typeof evmWallet>) => signIn(a, { chainId: 1 })],
    ["an expired sign-in", (a: ReturnType<typeof evmWallet>) => signIn(a, { issuedAt: new Date(Date.now() - 10 * 60_000), expirationTime: new Date(Date.now() - 5 * 60_000) })],
  ])("refuses %s with 401 X402_INVALID_SIGN_IN", async (_name, make) => {
    const account = await fundedWallet(5);
    const res = await chatAs(await make(account));
    expect(res.status).toBe(401);
    const body = (await res.json()) as { error: string; code: string; reason: string };
    expect(body.code).toBe("X402_INVALID_SIGN_IN");
    expect(body.error).toMatch(/^Invalid Sign-in-with-x signature/);
  });

  it("refuses a replayed sign-in (its nonce is single-use)", async () => {
    const account = await fundedWallet(5);
    const header = await signIn(account);
    expect((await chatAs(header)).status).toBe(200);
    const replay = await chatAs(header);
    expect(replay.status).toBe(401);
    expect(await replay.json()).toMatchObject({ code: "X402_INVALID_SIGN_IN", reason: "nonce_reused" });
  });

  it("a signed-in wallet without credit gets the wallet 402: top-up instructions, tokens, chains, a fresh challenge", async () => {
    const broke = evmWallet();
    const res = await chatAs(await signIn(broke));
    expect(res.status).toBe(402);
    const body = (await res.json()) as any;
    expect(body).toMatchObject({
      error: "Payment required",
      code: "PAYMENT_REQUIRED",
      reason: "insufficient_balance",
      currentBalanceUsd: 0,
      minimumBalanceUsd: 0.1,
      suggestedTopUpUsd: 10,
      minimumTopUpUsd: 5,
      supportedTokens: ["USDC"],
      supportedChains: ["base", "solana"],
      topUpInstructions: { receiverWallet: PAY_TO, tokenAddress: BASE_USDC, tokenDecimals: 6, network: "eip155:8453", minimumAmountUsd: 5 },
    });
    expect(Object.keys(body.topUpInstructions)).toEqual(["step1", "step2", "step3", "receiverWallet", "tokenAddress", "tokenDecimals", "network", "minimumAmountUsd"]);
    expect(Object.keys(body.siwxChallenge.info).sort()).toEqual(["domain", "expirationTime", "issuedAt", "nonce", "statement", "uri", "version"]);
    expect(decodeB64Json(res.headers.get("payment-required")).accepts).toHaveLength(2);
    // No account is made for a wallet that cannot spend.
    expect(findWallet(server.db, broke.address.toLowerCase())).toBeUndefined();
  });

  it("a wallet whose credit cannot cover this request's most expensive outcome gets the wallet 402, not INSUFFICIENT_BALANCE", async () => {
    const account = await fundedWallet(5);
    const res = await chatAs(await signIn(account), ask({ model: "pricey-chat", max_tokens: 500 }));
    expect(res.status).toBe(402);
    const body = (await res.json()) as any;
    expect(body.code).toBe("PAYMENT_REQUIRED");
    expect(body.currentBalanceUsd).toBe(5);
    expect(res.headers.get("payment-required")).toBeTruthy();
    const wallet = findWallet(server.db, account.address.toLowerCase())!;
    expect(getBalances(server.db, wallet.accountId).USD).toBe(5_000_000);
  });

  it("a Solana wallet signs in with Ed25519 after a Solana top-up", async () => {
    const wallet = solanaWallet();
    const { header } = await solanaPayment(wallet, { mint: SOLANA_USDC, payTo: SOLANA_PAY_TO, feePayer: FEE_PAYER, amount: 6_000_000n });
    expect((await topUp(header)).status).toBe(200);
    const res = await chatAs(solanaSignIn(wallet, { domain }));
    expect(res.status).toBe(200);
    expect(Number(res.headers.get("x-balance-remaining"))).toBeLessThan(6);
  });
});

describe("GET /x402/balance and /x402/transactions", () => {
  it("shows the signed-in wallet its balance in the reference's shape", async () => {
    const account = await fundedWallet(7);
    const res = await fetch(`${server.baseUrl}/x402/balance/${account.address}`, { headers: { "SIGN-IN-WITH-X": await signIn(account) } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      success: true,
      data: { walletAddress: account.address.toLowerCase(), balanceUsd: 7, canConsume: true, minimumTopUpUsd: 5, suggestedTopUpUsd: 10 },
    });
    // The wallet's own window (per address, the account endpoints' 300 per minute): each answer says where it stands.
    expect(res.headers.get("x-ratelimit-limit-requests")).toBe("300");
    const again = await fetch(`${server.baseUrl}/x402/balance/${account.address}`, { headers: { "SIGN-IN-WITH-X": await signIn(account) } });
    expect(Number(again.headers.get("x-ratelimit-remaining-requests"))).toBe(Number(res.headers.get("x-ratelimit-remaining-requests")) - 1);
    const fresh = evmWallet();
    const empty = await fetch(`${server.baseUrl}/x402/balance/${fresh.address.toLowerCase()}`, { headers: { "SIGN-IN-WITH-X": await signIn(fresh) } });
    expect(((await empty.json()) as any).data).toMatchObject({ balanceUsd: 0, canConsume: false });
    // Another wallet counts on its own.
    expect(empty.headers.get("x-ratelimit-remaining-requests")).toBe("299");
  });

  it("403 for another wallet's balance, 401 without a sign-in, 400 for a path that is not an address", async () => {
    const account = await fundedWallet(5);
    const other = evmWallet();
    const mismatch = await fetch(`${server.baseUrl}/x402/balance/${other.address}`, { headers: { "SIGN-IN-WITH-X": await signIn(account) } });
    expect(mismatch.status).toBe(403);
    expect(await mismatch.json()).toMatchObject({ code: "X402_WALLET_MISMATCH" });
    expect((await fetch(`${server.baseUrl}/x402/balance/${account.address}`)).status).toBe(401);
    const withKey = await fetch(`${server.baseUrl}/x402/balance/${account.address}`, { headers: { authorization: `Bearer ${server.adminKey}` } });
    expect(withKey.status).toBe(401);
    const bad = await fetch(`${server.baseUrl}/x402/transactions/not-an-address`, { headers: { "SIGN-IN-WITH-X": await signIn(account) } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).details).toBeDefined();
  });

  it("lists top-ups and per-request charges, newest first, with the balance after each", async () => {
    const account = await fundedWallet(5);
    const header = (await evmPayment(account, { asset: BASE_USDC, payTo: PAY_TO, value: 6_000_000n })).header;
    expect((await topUp(header)).status).toBe(200);
    const chat = await chatAs(await signIn(account));
    const { cost } = (await chat.json()) as { cost: { usd: number } };
    const requestId = chat.headers.get("cf-ray");

    const res = await fetch(`${server.baseUrl}/x402/transactions/${account.address}?limit=2`, { headers: { "SIGN-IN-WITH-X": await signIn(account) } });
    expect(res.status).toBe(200);
    const { data } = (await res.json()) as any;
    expect(data.walletAddress).toBe(account.address.toLowerCase());
    expect(data.currentBalance).toBeCloseTo(11 - cost.usd, 6);
    expect(data.pagination).toEqual({ limit: 2, offset: 0, hasMore: true });
    const [charge, topup] = data.transactions;
    expect(charge).toMatchObject({ type: "CHARGE", requestId, modelId: "tiny-chat" });
    expect(charge.amount).toBeCloseTo(-cost.usd, 6);
    expect(charge.balanceAfter).toBeCloseTo(11 - cost.usd, 6);
    expect(topup).toMatchObject({ type: "TOP_UP", amount: 6, balanceAfter: 11, requestId: null, modelId: null });
    expect(Object.keys(charge).sort()).toEqual(["amount", "balanceAfter", "createdAt", "id", "modelId", "requestId", "type"]);
    const rest = await fetch(`${server.baseUrl}/x402/transactions/${account.address}?limit=2&offset=2`, { headers: { "SIGN-IN-WITH-X": await signIn(account) } });
    const page2 = ((await rest.json()) as any).data;
    expect(page2.transactions).toHaveLength(1);
    expect(page2.transactions[0]).toMatchObject({ type: "TOP_UP", amount: 5, balanceAfter: 5 });
    expect(page2.pagination.hasMore).toBe(false);
    const invalid = await fetch(`${server.baseUrl}/x402/transactions/${account.address}?limit=101`, { headers: { "SIGN-IN-WITH-X": await signIn(account) } });
    expect(invalid.status).toBe(400);
  });
});
