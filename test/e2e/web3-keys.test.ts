import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { grantCredits } from "../../src/store/ledger.js";
import { ensureWalletAccount, findWallet } from "../../src/store/wallets.js";
import { post, startTestServer, type TestServer } from "../helpers/testServer.js";
import { evmWallet } from "../helpers/wallets.js";

/**
 * GET/POST /api_keys/generate_web3_key: a wallet signs a token of this node and gets an API key
 * for its own account, as the operator's web3Keys policy allows. Real signatures (viem accounts).
 */

let byCredit: TestServer;
let byList: TestServer;
let off: TestServer;
const listed = evmWallet();

beforeAll(async () => {
  [byCredit, byList, off] = await Promise.all([
    startTestServer(),
    startTestServer({ config: { wallet: { web3Keys: { allow: "allowlist", allowlist: [listed.address], allowAdminKeys: true, tokenTtlSeconds: 30 } } } as never }),
    startTestServer({ config: { wallet: { web3Keys: { allow: "none" } } } as never }),
  ]);
});
afterAll(() => Promise.all([byCredit.stop(), byList.stop(), off.stop()]));

const tokenOf = async (server: TestServer) => {
  const res = await fetch(`${server.baseUrl}/api_keys/generate_web3_key`);
  expect(res.status).toBe(200);
  const body = (await res.json()) as { success: boolean; data: { token: string } };
  expect(body.success).toBe(true);
  return body.data.token;
};
const claim = (server: TestServer, body: Record<string, unknown>) => post(server, "/api_keys/generate_web3_key", body, { key: null });

async function signed(server: TestServer, wallet = evmWallet(), extra: Record<string, unknown> = {}) {
  const token = await tokenOf(server);
  return { wallet, token, body: { apiKeyType: "INFERENCE", address: wallet.address, token, signature: await wallet.signMessage({ message: token }), ...extra } };
}

describe("keys for wallets", () => {
  it("a wallet with credit signs a token and gets an inference key on its own account that works at once", async () => {
    const wallet = evmWallet();
    const accountId = ensureWalletAccount(byCredit.db, wallet.address, "evm");
    grantCredits(byCredit.db, accountId, "USD", 2_000_000, "test");
    const { body } = await signed(byCredit, wallet, { description: "my laptop" });
    const res = await claim(byCredit, body);
    expect(res.status, await res.clone().text()).toBe(200);
    const created = (await res.json()) as { success: boolean; data: { apiKey: string; apiKeyType: string; description: string } };
    expect(created).toMatchObject({ success: true, data: { apiKeyType: "INFERENCE", description: "my laptop" } });
    const balance = await fetch(`${byCredit.baseUrl}/billing/balance`, { headers: { authorization: `Bearer ${created.data.apiKey}` } });
    expect(balance.status).toBe(200);
    expect(((await balance.json()) as { balances: { usd: number } }).balances.usd).toBe(2);
  });

  it("refuses replay, tampering, another wallet's signature, an expired or foreign token, and bad input", async () => {
    const wallet = evmWallet();
    grantCredits(byCredit.db, ensureWalletAccount(byCredit.db, wallet.address, "evm"), "USD", 1_000_000, "test");
    const { body } = await signed(byCredit, wallet);
    expect((await claim(byCredit, body)).status).toBe(200);
    // The same token again.
    const replay = await claim(byCredit, body);
    expect(replay.status).toBe(401);
    expect(((await replay.json()) as { error: string }).error).toContain("already used");
    // A token altered (its expiry pushed out), then signed: the node's MAC no longer matches.
    const fresh = await tokenOf(byCredit);
    const [payload, mac] = fresh.split(".");
    const altered = `${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload!, "base64url").toString()), exp: Date.now() + 1e9 })).toString("base64url")}.${mac}`;
    const tampered = await claim(byCredit, { ...body, token: altered, signature: await wallet.signMessage({ message: altered }) });
    expect(tampered.status).toBe(401);
    // Signed by someone else, claimed for this wallet.
    const stranger = await signed(byCredit, evmWallet());
    const forged = await claim(byCredit, { ...stranger.body, address: wallet.address });
    expect(forged.status).toBe(401);
    expect(((await forged.json()) as { error: string }).error).toContain("signature");
    // The forged attempt did not use the token up: its real owner still can... but has no credit.
    expect((await claim(byCredit, stranger.body)).status).toBe(403);
    // Another node's token.
    const elsewhere = await signed(byList, listed);
    expect((await claim(byCredit, elsewhere.body)).status).toBe(401);
    for (const [patch, field] of [
      [{ address: "0x1234" }, "address"],
      [{ signature: "0xnot-hex" }, "signature"],
      [{ apiKeyType: "ROOT" }, "apiKeyType"],
      [{ token: undefined }, "token"],
    ] as const) {
      const res = await claim(byCredit, { ...(await signed(byCredit, wallet)).body, ...patch });
      expect(res.status, JSON.stringify(patch)).toBe(400);
      expect(await res.text()).toContain(field);
    }
  });

  it("the operator's policy: credit (default) refuses an empty wallet and makes no account; allowlist; admin keys; none", async () => {
    const empty = await signed(byCredit);
    const refused = await claim(byCredit, empty.body);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: string }).error).toContain("no credit");
    expect(findWallet(byCredit.db, empty.wallet.address)).toBeUndefined();
    expect((await claim(byCredit, (await signed(byCredit, undefined, { apiKeyType: "ADMIN" })).body)).status).toBe(403);

    const admin = await claim(byList, (await signed(byList, listed, { apiKeyType: "ADMIN" })).body);
    expect(admin.status).toBe(200);
    expect(findWallet(byList.db, listed.address)).toBeDefined();
    const unlisted = await claim(byList, (await signed(byList)).body);
    expect(unlisted.status).toBe(403);
    expect(((await unlisted.json()) as { error: string }).error).toContain("list");

    expect((await fetch(`${off.baseUrl}/api_keys/generate_web3_key`)).status).toBe(403);
  });
});
