import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getBalances, listLedgerEntries } from "../../src/store/ledger.js";
import { databasePath, openStore } from "../../src/store/Store.js";
import { hearth } from "../helpers/cli.js";
import { post, startTestServer, type TestServer } from "../helpers/testServer.js";
import { listApiKeys } from "../../src/store/apiKeys.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ models: [] });
});
afterAll(() => server.stop());

const call = (path: string, key: string, init: RequestInit = {}) =>
  fetch(`${server.baseUrl}${path}`, { ...init, headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...init.headers } });

/** An admin key made through POST /api_keys by `creator`, in the creator's account. */
async function adminKeyMadeBy(creator: string): Promise<{ key: string; id: string }> {
  const res = await post(server, "/api_keys", { apiKeyType: "ADMIN", description: "made through the API" }, { key: creator });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { data: { apiKey: string; id: string } };
  return { key: body.data.apiKey, id: body.data.id };
}

const grant = (accountId: string, key: string, body: unknown = { currency: "USD", amount: 5 }) => post(server, `/admin/accounts/${accountId}/credits`, body, { key });

describe("the node operator and account admins", () => {
  it("lets no account admin create money, in its own account or another", async () => {
    const account = server.createKey({ admin: true });
    const other = server.createKey({ usd: 1 });
    const made = await adminKeyMadeBy(account.key);
    // Even an admin key the operator makes through the API is an account admin.
    const byOperator = await adminKeyMadeBy(server.adminKey);
    for (const key of [account.key, made.key, byOperator.key]) {
      for (const target of [account.accountId, other.accountId]) {
        const res = await grant(target, key);
        expect(res.status).toBe(403);
        expect(((await res.json()) as { error: string }).error).toMatch(/node operator's/);
      }
    }
    expect(getBalances(server.db, account.accountId).USD).toBe(0);
    expect(getBalances(server.db, other.accountId).USD).toBe(1_000_000);
    const grantedByKeys = [account, other].flatMap(({ accountId }) => listLedgerEntries(server.db, { accountId, kind: "grant" }).filter((row) => row.grantedBy !== null));
    expect(grantedByKeys).toHaveLength(0);
  });

  it("lets the operator grant to any account, recording who granted", async () => {
    const target = server.createKey();
    const operatorKeyId = listApiKeys(server.db).find((key) => key.operator)!.id;
    const res = await grant(target.accountId, server.adminKey, { currency: "USD", amount: 2.5, note: "welcome" });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { data: { balances: { USD: number } } }).data.balances.USD).toBe(2.5);
    const [row] = listLedgerEntries(server.db, { accountId: target.accountId, kind: "grant" });
    expect(row).toMatchObject({ deltaMicros: 2_500_000, note: "welcome", grantedBy: operatorKeyId });
  });

  it.each([
    ["negative", -0.5],
    ["zero", 0],
  ])("answers a %s amount with a 400 naming amount, for the operator too", async (_name, amount) => {
    const target = server.createKey();
    const res = await grant(target.accountId, server.adminKey, { currency: "USD", amount });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { details: Record<string, { _errors: string[] }> };
    expect(body.details.amount!._errors[0]).toMatch(/greater than 0/);
    expect(getBalances(server.db, target.accountId).USD).toBe(0);
  });

  it("keeps node-wide endpoints for the operator and lets an account admin manage its own account", async () => {
    const account = server.createKey({ admin: true });
    const nodeWide: [string, RequestInit?][] = [["/admin/models"], ["/admin/accounts"], ["/admin/usage"], ["/admin/models/nothing/unload", { method: "POST" }]];
    for (const [path, init] of nodeWide) {
      expect((await call(path, account.key, init)).status, path).toBe(403);
      expect((await call(path, server.adminKey, init)).status, path).not.toBe(403);
    }
    expect((await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${account.key}` } })).status).toBe(403);
    expect((await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${server.adminKey}` } })).status).toBe(200);
    expect((await call("/billing/balance", account.key)).status).toBe(200);
    const made = await adminKeyMadeBy(account.key);
    const listed = (await (await call("/api_keys?include=service_fields", account.key)).json()) as { data: { id: string; isOperator: boolean }[] };
    expect(listed.data.map((k) => k.isOperator)).toEqual([false, false]);
    expect(listed.data.map((k) => k.id)).toContain(made.id);
  });

  it("shows which key is the operator's and keeps it out of reach of its account's admins", async () => {
    const operatorKeyId = listApiKeys(server.db).find((key) => key.operator)!.id;
    const colleague = await adminKeyMadeBy(server.adminKey);
    const listed = (await (await call("/api_keys?include=service_fields", colleague.key)).json()) as { data: { id: string; isOperator: boolean }[] };
    expect(listed.data.find((k) => k.id === operatorKeyId)?.isOperator).toBe(true);
    expect(listed.data.find((k) => k.id === colleague.id)?.isOperator).toBe(false);
    expect((await call(`/api_keys?id=${operatorKeyId}`, colleague.key, { method: "DELETE" })).status).toBe(403);
    expect((await call("/api_keys", colleague.key, { method: "PATCH", body: JSON.stringify({ id: operatorKeyId, description: "mine now" }) })).status).toBe(403);
    expect((await call("/billing/balance", server.adminKey)).status).toBe(200);
    // The operator may revoke an account admin in its account.
    expect((await call(`/api_keys?id=${colleague.id}`, server.adminKey, { method: "DELETE" })).status).toBe(200);
  });

  it("keeps raising rate limits for the operator: an account admin may not pick the partner tier or overrides", async () => {
    const account = server.createKey({ admin: true });
    const made = await adminKeyMadeBy(account.key);
    const raise = [
      ["rateLimitTier", { rateLimitTier: "partner" }],
      ["rateLimits", { rateLimits: { "text:S": { rpm: 100000, tpm: 100000000 } } }],
    ] as const;
    for (const [field, change] of raise) {
      const created = await post(server, "/api_keys", { apiKeyType: "INFERENCE", description: "faster", ...change }, { key: account.key });
      expect(created.status, field).toBe(403);
      expect(((await created.json()) as { error: string }).error).toMatch(new RegExp(`^${field}:`));
      const patched = await call("/api_keys", account.key, { method: "PATCH", body: JSON.stringify({ id: made.id, ...change }) });
      expect(patched.status, field).toBe(403);
      // The operator may (here in its own account).
      const byOperator = await post(server, "/api_keys", { apiKeyType: "INFERENCE", description: "faster", ...change }, { key: server.adminKey });
      expect(byOperator.status, field).toBe(200);
    }
    // Staying on the standard tier is the account's own business.
    expect((await call("/api_keys", account.key, { method: "PATCH", body: JSON.stringify({ id: made.id, rateLimitTier: "standard", description: "renamed" }) })).status).toBe(200);
  });
});

describe("operator keys from the CLI", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "hearth-operator-"));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it("makes the first admin key of a fresh node and --operator keys the operator's; grants from the CLI are recorded as such", { timeout: 120_000 }, async () => {
    const create = async (...flags: string[]) => {
      const result = await hearth(["keys", "create", "--name", "k", ...flags, "--data-dir", dataDir]);
      expect(result.status, result.stderr).toBe(0);
      return result.stdout;
    };
    expect(await create("--admin", "--usd", "1")).toMatch(/^Created operator key/);
    expect(await create("--admin")).toMatch(/^Created account admin key/);
    expect(await create("--operator")).toMatch(/^Created operator key/);
    const db = openStore(databasePath(dataDir));
    try {
      expect(listApiKeys(db).map((key) => `${key.keyType}:${key.operator ? 1 : 0}`)).toEqual(["ADMIN:1", "ADMIN:0", "ADMIN:1"]);
      expect(listLedgerEntries(db, { kind: "grant" }).map((row) => row.grantedBy)).toEqual(["cli"]);
    } finally {
      db.close();
    }
  });
});
