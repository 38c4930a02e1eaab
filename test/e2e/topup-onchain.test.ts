import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getBalances, ledgerTotals, listLedgerEntries } from "../../src/store/ledger.js";
import { findWallet } from "../../src/store/wallets.js";
import { ANVIL_KEYS, deployTestUsdc, startAnvil, type Anvil, type TestToken } from "../helpers/anvil.js";
import { startTestServer, type TestServer } from "../helpers/testServer.js";
import { decodeB64Json, evmPayment, evmWallet } from "../helpers/wallets.js";
import { listPayments } from "../../src/store/x402Payments.js";

/**
 * Settlement against a real EVM node: anvil (chain id 8453) with a test USDC that implements
 * EIP-3009 and EIP-712 like the real one. The node submits transferWithAuthorization from its
 * settler account; nothing is credited before the transfer is mined and matches.
 */
const PAY_TO = evmWallet().address;
let anvil: Anvil;
let token: TestToken;

beforeAll(async () => {
  anvil = await startAnvil({ chainId: 8453 });
  token = await deployTestUsdc(anvil, "USD Coin", "2");
}, 120_000);
afterAll(() => anvil?.stop());

function walletConfig(settlement: "onchain" | "deferred") {
  return {
    wallet: {
      x402: {
        settlement,
        deferredIntervalMs: 3_600_000,
        base: {
          network: "eip155:8453",
          asset: token.address,
          payTo: PAY_TO,
          eip712: { name: "USD Coin", version: "2" },
          rpcUrl: anvil.url,
          settlerPrivateKey: ANVIL_KEYS.settler,
          receiptTimeoutMs: 30_000,
        },
      },
    },
  } as never;
}

const topUp = (server: TestServer, header: string) => fetch(`${server.baseUrl}/x402/top-up`, { method: "POST", headers: { "PAYMENT-SIGNATURE": header } });
const credited = (server: TestServer, wallet: string) => {
  const record = findWallet(server.db, wallet.toLowerCase());
  return record ? getBalances(server.db, record.accountId).USD : 0;
};
const pay = (account: ReturnType<typeof evmWallet>, value: bigint) => evmPayment(account, { asset: token.address, payTo: PAY_TO, value });

async function until(condition: () => Promise<boolean> | boolean, what: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
const pendingTransactions = async () => Number((await anvil.rpc<{ pending: string }>("txpool_status")).pending);

describe("onchain settlement", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ models: [], config: walletConfig("onchain") });
  });
  afterAll(async () => {
    await anvil.rpc("evm_setAutomine", [true]);
    await server.stop();
  });

  it("credits a top-up only once its transfer is mined, and answers with the transaction hash", async () => {
    const payer = evmWallet();
    await token.mint(payer.address, 20_000_000n);
    await anvil.rpc("evm_setAutomine", [false]);
    const before = await token.balanceOf(PAY_TO as `0x${string}`);

    const response = topUp(server, (await pay(payer, 8_000_000n)).header);
    await until(async () => (await pendingTransactions()) === 1, "the transfer to reach the mempool");
    // The node records the hash once the send returns, which can be just after the mempool has the transfer.
    await until(() => listPayments(server.db)[0]?.settlement === "submitted", "the payment to be recorded as submitted");
    // Submitted, not mined: nothing credited yet.
    expect(credited(server, payer.address)).toBe(0);
    expect(listPayments(server.db)[0]).toMatchObject({ settlement: "submitted", credited: 0 });

    await anvil.rpc("evm_mine");
    const res = await response;
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body.data).toMatchObject({ walletAddress: payer.address.toLowerCase(), amountCredited: 8, newBalance: 8 });
    const settled = decodeB64Json(res.headers.get("payment-response"));
    expect(settled).toMatchObject({ success: true, network: "eip155:8453", payer: payer.address.toLowerCase() });
    const receipt = await anvil.rpc<{ status: string; to: string }>("eth_getTransactionReceipt", [settled.transaction]);
    expect(receipt.status).toBe("0x1");
    expect(receipt.to.toLowerCase()).toBe(token.address.toLowerCase());
    expect(credited(server, payer.address)).toBe(8_000_000);
    expect((await token.balanceOf(PAY_TO as `0x${string}`)) - before).toBe(8_000_000n);
    expect(await token.balanceOf(payer.address)).toBe(12_000_000n);
    await anvil.rpc("evm_setAutomine", [true]);
  });

  it("a transfer that would revert (no funds) credits nothing and costs no gas", async () => {
    const payer = evmWallet();
    const res = await topUp(server, (await pay(payer, 5_000_000n)).header);
    expect(res.status).toBe(400);
    const body = (await res.json()) as any;
    expect(body).toMatchObject({ error: "PAYMENT_VERIFICATION_FAILED", details: { reason: "transfer_simulation_failed" } });
    expect(body.message).toMatch(/exceeds balance/);
    expect(credited(server, payer.address)).toBe(0);
  });

  it("a transfer that reverts in its block (two authorizations racing for one balance) credits only the one that paid", async () => {
    const payer = evmWallet();
    await token.mint(payer.address, 5_000_000n);
    await anvil.rpc("evm_setAutomine", [false]);
    const first = topUp(server, (await pay(payer, 5_000_000n)).header);
    await until(async () => (await pendingTransactions()) === 1, "the first transfer");
    const second = topUp(server, (await pay(payer, 5_000_000n)).header);
    await until(async () => (await pendingTransactions()) === 2, "the second transfer");
    await anvil.rpc("evm_mine");
    const [a, b] = await Promise.all([first, second]);
    expect(a.status).toBe(200);
    expect(b.status).toBe(400);
    const failed = (await b.json()) as any;
    expect(failed).toMatchObject({ error: "PAYMENT_VERIFICATION_FAILED", details: { reason: "transfer_failed" } });
    const receipt = await anvil.rpc<{ status: string }>("eth_getTransactionReceipt", [failed.details.transaction]);
    expect(receipt.status).toBe("0x0");
    expect(credited(server, payer.address)).toBe(5_000_000);
    await anvil.rpc("evm_setAutomine", [true]);
  });

  it("the same payment sent twice concurrently settles and credits once", async () => {
    const payer = evmWallet();
    await token.mint(payer.address, 10_000_000n);
    const { header } = await pay(payer, 6_000_000n);
    const results = await Promise.all([topUp(server, header), topUp(server, header), topUp(server, header)]);
    expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
    const hashes = results.map((r) => decodeB64Json(r.headers.get("payment-response")).transaction);
    expect(new Set(hashes).size).toBe(1);
    expect(credited(server, payer.address)).toBe(6_000_000);
    expect(await token.balanceOf(payer.address)).toBe(4_000_000n);
    const wallet = findWallet(server.db, payer.address.toLowerCase())!;
    expect(ledgerTotals(server.db, wallet.accountId)).toEqual(getBalances(server.db, wallet.accountId));
  });
});

describe("deferred settlement", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ models: [], config: walletConfig("deferred") });
  });
  afterAll(() => server.stop());

  it("credits on the verified signature, then submits the transfer in the background", async () => {
    const payer = evmWallet();
    await token.mint(payer.address, 9_000_000n);
    const res = await topUp(server, (await pay(payer, 9_000_000n)).header);
    expect(res.status).toBe(200);
    expect(decodeB64Json(res.headers.get("payment-response")).transaction).toBe("");
    expect(credited(server, payer.address)).toBe(9_000_000);
    expect(await token.balanceOf(payer.address)).toBe(9_000_000n);

    await server.wallet.topUps.settlePending(); // submits (anvil mines at once)
    await server.wallet.topUps.settlePending(); // sees the receipt
    const row = listPayments(server.db)[0]!;
    expect(row).toMatchObject({ settlement: "confirmed", credited: 1 });
    expect(row.tx_hash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(await token.balanceOf(payer.address)).toBe(0n);
    expect(credited(server, payer.address)).toBe(9_000_000);
  });

  it("refuses at once a payment whose transfer would fail now (no funds), crediting nothing", async () => {
    const payer = evmWallet(); // holds no USDC: the signature verifies, the transfer cannot
    const res = await topUp(server, (await pay(payer, 5_000_000n)).header);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: "PAYMENT_VERIFICATION_FAILED", details: { reason: "transfer_simulation_failed" } });
    expect(credited(server, payer.address)).toBe(0);
  });

  it("takes a deferred credit back when its transfer fails later (the payer moved the funds first), and does not credit it again", async () => {
    const payer = evmWallet();
    await token.mint(payer.address, 5_000_000n);
    const { header } = await pay(payer, 5_000_000n);
    expect((await topUp(server, header)).status).toBe(200);
    expect(credited(server, payer.address)).toBe(5_000_000);

    // Before the node submits, the payer spends the same USDC with another authorization.
    const elsewhere = await evmPayment(payer, { asset: token.address, payTo: evmWallet().address, value: 5_000_000n });
    const { authorization, signature } = decodeB64Json(elsewhere.header).payload;
    const { v, r, s } = splitSignature(signature);
    await token.write("transferWithAuthorization", [
      authorization.from,
      authorization.to,
      BigInt(authorization.value),
      BigInt(authorization.validAfter),
      BigInt(authorization.validBefore),
      authorization.nonce,
      v,
      r,
      s,
    ]);

    await server.wallet.topUps.settlePending();
    expect(credited(server, payer.address)).toBe(0);
    const wallet = findWallet(server.db, payer.address.toLowerCase())!;
    const kinds = listLedgerEntries(server.db, { accountId: wallet.accountId }).map(({ kind, deltaMicros }) => ({ kind, delta: deltaMicros }));
    expect(kinds).toEqual([
      { kind: "topup", delta: 5_000_000 },
      { kind: "topup_reversal", delta: -5_000_000 },
    ]);
    const payment = listPayments(server.db).find((p) => p.wallet === payer.address.toLowerCase())!;
    expect(payment.settlement).toBe("failed");
    expect(payment.error).toMatch(/transfer_simulation_failed/);

    const again = await topUp(server, header);
    expect(again.status).toBe(400);
    expect(await again.json()).toMatchObject({ error: "PAYMENT_VERIFICATION_FAILED" });
    expect(credited(server, payer.address)).toBe(0);
  });
});

function splitSignature(signature: `0x${string}`) {
  return { r: `0x${signature.slice(2, 66)}`, s: `0x${signature.slice(66, 130)}`, v: Number.parseInt(signature.slice(130, 132), 16) };
}
