import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getBalances, listLedgerEntries } from "../../src/store/ledger.js";
import { findWallet } from "../../src/store/wallets.js";
import { freePort, startAnvil, type Anvil } from "../helpers/anvil.js";
import { startTestServer, type TestServer } from "../helpers/testServer.js";
import { evmPayment, evmSignIn, evmWallet } from "../helpers/wallets.js";
import { countReservations } from "../../src/store/reservations.js";
import { findIdempotencyClaim } from "../../src/store/rpcIdempotency.js";

/**
 * The crypto RPC proxy against a real EVM node (anvil), plus a small loopback peer that
 * records what reaches it (headers), answers slowly or too much, to test the proxy's edges.
 */
let anvil: Anvil;
let server: TestServer;
let recorder: Server;
const seen: IncomingHttpHeaders[] = [];
let recorderMode: "echo" | "slow" | "huge" = "echo";
const PAY_TO = evmWallet().address;

beforeAll(async () => {
  anvil = await startAnvil({ chainId: 8453 });
  recorder = createServer((req, res) => {
    seen.push(req.headers);
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      if (recorderMode === "slow") return; // never answers
      const call = JSON.parse(body) as { id: number };
      const result = recorderMode === "huge" ? "x".repeat(64 * 1024) : "0x1";
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ jsonrpc: "2.0", id: call.id, result }));
    });
  });
  await new Promise<void>((resolve) => recorder.listen(0, "127.0.0.1", resolve));
  const recorderUrl = `http://127.0.0.1:${(recorder.address() as AddressInfo).port}`;
  const deadPort = await freePort();
  server = await startTestServer({
    models: [],
    config: {
      wallet: {
        x402: { settlement: "off", base: { payTo: PAY_TO } },
        rpc: {
          timeoutMs: 1_500,
          maxResponseBytes: 16 * 1024,
          networks: {
            "base-mainnet": { url: anvil.url },
            "zksync-mainnet": { url: anvil.url },
            "starknet-mainnet": { url: anvil.url },
            "ethereum-mainnet": { url: `http://127.0.0.1:${deadPort}` },
            "polygon-mainnet": { url: recorderUrl },
          },
        },
      },
    } as never,
  });
}, 60_000);
afterAll(async () => {
  await server?.stop();
  recorder?.closeAllConnections();
  await new Promise((r) => recorder?.close(r));
  await anvil?.stop();
});

const rpc = (network: string, body: unknown, headers: Record<string, string>) =>
  fetch(`${server.baseUrl}/crypto/rpc/${network}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
const call = (method: string, params: unknown[] = [], id: number | string = 1) => ({ jsonrpc: "2.0", method, params, id });

/** A key on an account holding $1, and a way to read what it has been charged. */
function payer() {
  const { key, accountId } = server.createKey({ usd: 1 });
  return { auth: { authorization: `Bearer ${key}` }, spent: () => 1_000_000 - getBalances(server.db, accountId).USD, accountId };
}

describe("GET /crypto/rpc/networks", () => {
  it("is public and lists the configured networks, sorted", async () => {
    const res = await fetch(`${server.baseUrl}/crypto/rpc/networks`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ networks: ["base-mainnet", "ethereum-mainnet", "polygon-mainnet", "starknet-mainnet", "zksync-mainnet"] });
  });
});

describe("POST /crypto/rpc/{network}", () => {
  it("forwards a single call and bills its tier: 20 credits at 7e-7 USD", async () => {
    const { auth, spent, accountId } = payer();
    const res = await rpc("base-mainnet", call("eth_chainId"), auth);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({ jsonrpc: "2.0", id: 1, result: "0x2105" });
    expect(res.headers.get("x-service-rpc-credits")).toBe("20");
    expect(res.headers.get("x-service-rpc-cost-usd")).toBe("0.00001400");
    expect(res.headers.get("x-request-id")).toMatch(/^[0-9a-f]{32}$/);
    expect(spent()).toBe(14);
    const line = listLedgerEntries(server.db, { accountId, kind: "charge" }).map(({ sku, units, model }) => ({ sku, units, model }))[0];
    expect(line).toEqual({ sku: "crypto-rpc-credit", units: 20, model: "crypto-rpc/base-mainnet" });
  });

  it("forwards a batch, answering in the caller's order with the caller's ids", async () => {
    const { auth, spent } = payer();
    const res = await rpc("base-mainnet", [call("eth_blockNumber", [], "b"), call("eth_chainId", [], "a"), call("net_version", [], "b")], auth);
    expect(res.status).toBe(200);
    const body = (await res.json()) as any[];
    expect(body.map((item) => item.id)).toEqual(["b", "a", "b"]);
    expect(body[1].result).toBe("0x2105");
    expect(body[2].result).toBe("8453");
    expect(res.headers.get("x-service-rpc-credits")).toBe("60");
    expect(spent()).toBe(42);
  });

  it("bills an error item at 5 credits instead of its tier", async () => {
    const { auth, spent } = payer();
    const single = await rpc("base-mainnet", call("eth_getBalance", ["not-an-address", "latest"]), auth);
    expect(single.status).toBe(200);
    expect(((await single.json()) as any).error.code).toBeTypeOf("number");
    expect(single.headers.get("x-service-rpc-credits")).toBe("5");
    expect(single.headers.get("x-service-rpc-cost-usd")).toBe("0.00000350");
    expect(spent()).toBe(4); // 3.5 micro-USD, rounded up to the micro
    const batch = await rpc("base-mainnet", [call("eth_chainId"), call("eth_getBalance", ["bad"], 2)], auth);
    expect(batch.headers.get("x-service-rpc-credits")).toBe("25");
    expect(spent()).toBe(4 + 18);
  });

  it("prices by network and tier: zkSync's base is 30, debug_* is 2x", async () => {
    const { auth } = payer();
    const zk = await rpc("zksync-mainnet", call("eth_chainId"), auth);
    expect(zk.headers.get("x-service-rpc-credits")).toBe("30");
    const trace = await rpc("base-mainnet", call("debug_traceTransaction", [`0x${"0".repeat(64)}`]), auth);
    expect(trace.status).toBe(200);
    expect(trace.headers.get("x-service-rpc-credits")).toBe("40");
  });

  it("refuses the whole batch, listing the methods, when any method is not allowed; nothing is forwarded or charged", async () => {
    const { auth, spent } = payer();
    const res = await rpc("base-mainnet", [call("eth_chainId"), call("eth_newFilter", [{}]), call("eth_accounts"), call("eth_subscribe", ["newHeads"])], auth);
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: string; details: { unsupportedMethods: string[] } };
    expect(body.details.unsupportedMethods).toEqual(["eth_newFilter", "eth_accounts", "eth_subscribe"]);
    expect(body.error).toMatch(/eth_newFilter \(stateful filter methods/);
    expect(body.error).toMatch(/eth_subscribe \(WebSocket-only/);
    const cross = await rpc("starknet-mainnet", call("eth_call", [{}]), auth);
    expect(cross.status).toBe(400);
    expect(((await cross.json()) as any).error).toMatch(/not a Starknet method/);
    const unknown = await rpc("base-mainnet", call("anvil_setBalance", ["0x0", "0x1"]), auth);
    expect(unknown.status).toBe(400);
    expect(spent()).toBe(0);
  });

  it("validates the body and the network", async () => {
    const { auth } = payer();
    expect((await rpc("base-mainnet", [], auth)).status).toBe(400);
    expect(
      (
        await rpc(
          "base-mainnet",
          Array.from({ length: 101 }, (_, i) => call("eth_chainId", [], i)),
          auth,
        )
      ).status,
    ).toBe(400);
    expect((await rpc("base-mainnet", { jsonrpc: "2.0", id: 1 }, auth)).status).toBe(400);
    const unsupported = await rpc("dogecoin-mainnet", call("eth_chainId"), auth);
    expect(unsupported.status).toBe(400);
    expect(((await unsupported.json()) as any).error).toMatch(/Unsupported RPC network/);
  });

  it("replays an Idempotency-Key's answer without a second charge; the same key with another body is a 400", async () => {
    const { auth, spent } = payer();
    const first = await rpc("base-mainnet", [call("eth_chainId"), call("eth_blockNumber", [], 2)], { ...auth, "Idempotency-Key": "retry-me_1" });
    expect(first.status).toBe(200);
    const firstBody = await first.json();
    expect(spent()).toBe(28);
    await anvil.rpc("evm_mine"); // the block number moves: a replay must not ask again
    const again = await rpc("base-mainnet", [call("eth_chainId"), call("eth_blockNumber", [], 2)], { ...auth, "Idempotency-Key": "retry-me_1" });
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.headers.get("x-service-rpc-credits")).toBe("40");
    expect(await again.json()).toEqual(firstBody);
    expect(spent()).toBe(28);
    const other = await rpc("base-mainnet", call("eth_chainId"), { ...auth, "Idempotency-Key": "retry-me_1" });
    expect(other.status).toBe(400);
    expect((await rpc("base-mainnet", call("eth_chainId"), { ...auth, "Idempotency-Key": "no spaces allowed" })).status).toBe(400);
    // Keys are per account.
    const someoneElse = payer();
    expect((await rpc("base-mainnet", call("eth_chainId"), { ...someoneElse.auth, "Idempotency-Key": "retry-me_1" })).status).toBe(200);
  });

  it("an upstream that is down is a clear 500 and charges nothing", async () => {
    const { auth, spent, accountId } = payer();
    const res = await rpc("ethereum-mainnet", call("eth_chainId"), { ...auth, "Idempotency-Key": "down-1" });
    expect(res.status).toBe(500);
    const body = (await res.json()) as { error: string };
    expect(body.error).toMatch(/upstream RPC node for ethereum-mainnet is unreachable.*Nothing was charged/);
    expect(body.error).not.toContain("127.0.0.1");
    expect(spent()).toBe(0);
    expect(countReservations(server.db)).toBe(0);
    // The failed attempt did not keep its Idempotency-Key.
    expect(findIdempotencyClaim(server.db, accountId, "down-1")).toBeUndefined();
  });

  it("never forwards the caller's credentials, and cuts slow or oversized upstream answers (nothing charged)", async () => {
    const { auth, spent } = payer();
    seen.length = 0;
    recorderMode = "echo";
    const res = await rpc("polygon-mainnet", call("eth_chainId"), { ...auth, cookie: "session=1", "x-api-key": "secret" });
    expect(res.status).toBe(200);
    const headers = seen[0]!;
    expect(headers.authorization).toBeUndefined();
    expect(headers.cookie).toBeUndefined();
    expect(headers["x-api-key"]).toBeUndefined();
    expect(headers["sign-in-with-x"]).toBeUndefined();
    expect(headers["content-type"]).toBe("application/json");
    const charged = spent();

    recorderMode = "huge";
    const huge = await rpc("polygon-mainnet", call("eth_chainId"), auth);
    expect(huge.status).toBe(500);
    expect(((await huge.json()) as any).error).toMatch(/more than 16384 bytes/);
    recorderMode = "slow";
    const slow = await rpc("polygon-mainnet", call("eth_chainId"), auth);
    expect(slow.status).toBe(500);
    expect(((await slow.json()) as any).error).toMatch(/did not answer within 1500 ms/);
    expect(spent()).toBe(charged);
    recorderMode = "echo";
  });

  it("accepts a wallet sign-in, reports X-Balance-Remaining, and answers 402/401 without or with bad credentials", async () => {
    const domain = new URL(server.url).host;
    const account = evmWallet();
    const { header } = await evmPayment(account, { asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", payTo: PAY_TO, value: 5_000_000n });
    expect((await fetch(`${server.baseUrl}/x402/top-up`, { method: "POST", headers: { "PAYMENT-SIGNATURE": header } })).status).toBe(200);
    const res = await rpc("base-mainnet", call("eth_chainId"), { "SIGN-IN-WITH-X": await evmSignIn(account, { domain }) });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-balance-remaining")).toBe("4.999986");
    const wallet = findWallet(server.db, account.address.toLowerCase())!;
    expect(getBalances(server.db, wallet.accountId).USD).toBe(4_999_986);

    const anonymous = await rpc("base-mainnet", call("eth_chainId"), {});
    expect(anonymous.status).toBe(402);
    expect(anonymous.headers.get("payment-required")).toBeTruthy();
    expect((await rpc("base-mainnet", call("eth_chainId"), { authorization: "Bearer hth_wrong" })).status).toBe(401);
    const replayed = await evmSignIn(account, { domain, nonce: "onceonly1" });
    expect((await rpc("base-mainnet", call("eth_chainId"), { "SIGN-IN-WITH-X": replayed })).status).toBe(200);
    expect((await rpc("base-mainnet", call("eth_chainId"), { "SIGN-IN-WITH-X": replayed })).status).toBe(401);
  });
});

describe("crypto RPC caps", () => {
  it("refuses beyond the per-minute request cap and the rolling 24 h credit cap with 429", async () => {
    const capped = await startTestServer({
      models: [],
      config: { wallet: { rpc: { requestsPerMinute: 3, creditsPerDay: 50, networks: { "base-mainnet": { url: anvil.url } } } } } as never,
    });
    try {
      const send = (key: string) =>
        fetch(`${capped.baseUrl}/crypto/rpc/base-mainnet`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
          body: JSON.stringify(call("eth_chainId")),
        });
      // One rate window for the whole test (see withClockStopped).
      await capped.withClockStopped(async () => {
        const { key } = capped.createKey({ usd: 1 });
        const first = await send(key);
        expect(first.status).toBe(200);
        // The per-minute cap's window on every answer, in the node's names and the proxy's.
        expect(first.headers.get("x-ratelimit-limit-requests")).toBe("3");
        expect(first.headers.get("x-ratelimit-remaining-requests")).toBe("2");
        expect(first.headers.get("x-ratelimit-limit")).toBe("3");
        expect(first.headers.get("x-ratelimit-remaining")).toBe("2");
        expect(first.headers.get("x-ratelimit-reset")).toBe(first.headers.get("x-ratelimit-reset-requests"));
        expect((await send(key)).status).toBe(200);
        const overCredits = await send(key); // 40 used + 20 > 50
        expect(overCredits.status).toBe(429);
        expect(((await overCredits.json()) as any).error).toMatch(/50 credits per rolling 24 hours \(40 used\)/);
        const overRate = await send(key); // the fourth request in the minute
        expect(overRate.status).toBe(429);
        expect(overRate.headers.get("x-ratelimit-limit")).toBe("3");
        expect(overRate.headers.get("x-ratelimit-remaining")).toBe("0");
        expect(Number(overRate.headers.get("x-ratelimit-reset"))).toBeGreaterThan(Date.now() / 1000);
        // Another caller has caps of its own.
        expect((await send(capped.createKey({ usd: 1 }).key)).status).toBe(200);
      });
    } finally {
      await capped.stop();
    }
  });
});
