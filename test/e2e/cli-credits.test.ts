import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { USAGE_CSV_COLUMNS } from "../../src/billing/usageReport.js";
import { databasePath, openStore } from "../../src/store/Store.js";
import { exited, hearth, hearthServe } from "../helpers/cli.js";
import { tinyChatPath } from "../helpers/testServer.js";
import { listLedgerEntries } from "../../src/store/ledger.js";

const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "hearth-cli-credits-"));
  dirs.push(dir);
  return dir;
};
afterAll(() =>
  dirs.forEach((d) => {
    rmSync(d, { recursive: true, force: true });
  }),
);

/** `hearth keys create` in `dataDir`; returns the ids it prints and the secret. */
async function createKey(dataDir: string, name: string) {
  const created = await hearth(["keys", "create", "--name", name, "--admin", "--data-dir", dataDir]);
  expect(created.status, created.stderr).toBe(0);
  const [, keyId, accountId] = /key (\S+) for account (\S+)\./.exec(created.stdout)!;
  return { keyId: keyId!, accountId: accountId!, secret: created.stdout.trim().split("\n").at(-1)! };
}

async function balanceOf(dataDir: string, accountId: string) {
  const result = await hearth(["credits", "balance", "--account", accountId, "--json", "--data-dir", dataDir]);
  expect(result.status, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as Record<string, any>;
}

describe("hearth credits and hearth usage", () => {
  it("explains every option in --help", { timeout: 120_000 }, async () => {
    const expectations: [string[], string[]][] = [
      [["--help"], ["credits", "usage"]],
      [
        ["credits", "--help"],
        ["grant", "stake", "balance"],
      ],
      [
        ["credits", "grant", "--help"],
        ["--key", "--account", "--usd", "--diem", "--bundled", "--note", "--data-dir"],
      ],
      [
        ["credits", "stake", "--help"],
        ["--account", "--diem", "--data-dir", "--diem-reset-hour"],
      ],
      [
        ["credits", "balance", "--help"],
        ["--account", "--json", "--data-dir"],
      ],
      [
        ["usage", "export", "--help"],
        ["--since", "--until", "--account", "--data-dir", "CSV"],
      ],
    ];
    for (const [args, words] of expectations) {
      const { status, stdout } = await hearth(args);
      expect(status, args.join(" ")).toBe(0);
      for (const word of words) expect(stdout, `${args.join(" ")} mentions ${word}`).toContain(word);
    }
  });

  it("grants by account or by key, stakes DIEM, and reports the balance as /billing/balance does", { timeout: 120_000 }, async () => {
    const dataDir = tempDir();
    const { keyId, accountId } = await createKey(dataDir, "alice");
    expect(await balanceOf(dataDir, accountId)).toMatchObject({ accountId, canConsume: false, consumptionCurrency: null, balances: { diem: null, usd: 0 } });

    const usd = await hearth(["credits", "grant", "--account", accountId, "--usd", "2.5", "--data-dir", dataDir]);
    expect(usd.status, usd.stderr).toBe(0);
    expect(usd.stdout).toContain("2.500000 USD");
    expect(await balanceOf(dataDir, accountId)).toMatchObject({ canConsume: true, consumptionCurrency: "USD", balances: { diem: null, usd: 2.5 }, diemEpochAllocation: 0 });

    expect((await hearth(["credits", "grant", "--key", keyId, "--bundled", "1", "--note", "launch promo", "--data-dir", dataDir])).status).toBe(0);
    expect(await balanceOf(dataDir, accountId)).toMatchObject({
      consumptionCurrency: "BUNDLED_CREDITS",
      balances: { diem: null, usd: 3.5 },
      details: { usd: 2.5, bundledCredits: 1, diem: 0, stakedDiem: 0 },
    });

    // Granted DIEM lasts the epoch: it is not taken by the epoch refresh of the next read.
    expect((await hearth(["credits", "grant", "--account", accountId, "--diem", "2", "--data-dir", dataDir])).status).toBe(0);
    expect(await balanceOf(dataDir, accountId)).toMatchObject({ consumptionCurrency: "DIEM", balances: { diem: 2, usd: 3.5 }, diemEpochAllocation: 0 });

    const stake = await hearth(["credits", "stake", "--account", accountId, "--diem", "4", "--data-dir", dataDir]);
    expect(stake.status, stake.stderr).toBe(0);
    expect(await balanceOf(dataDir, accountId)).toMatchObject({ consumptionCurrency: "DIEM", balances: { diem: 4, usd: 3.5 }, diemEpochAllocation: 4, details: { stakedDiem: 4 } });

    // Also as the very first operation on a fresh account (its first epoch refresh comes first).
    const carol = await createKey(dataDir, "carol");
    expect((await hearth(["credits", "grant", "--key", carol.keyId, "--diem", "1.5", "--data-dir", dataDir])).stdout).toContain("balance is now 1.500000");
    expect(await balanceOf(dataDir, carol.accountId)).toMatchObject({ consumptionCurrency: "DIEM", balances: { diem: 1.5, usd: 0 } });

    const text = await hearth(["credits", "balance", "--account", accountId, "--data-dir", dataDir]);
    expect(text.status).toBe(0);
    expect(text.stdout).toMatch(/USD\s+3\.500000 \(bundled credits 1\.000000 included\)/);
    expect(text.stdout).toMatch(/DIEM\s+4\.000000 \(staked per epoch: 4\.000000\)/);
    expect(text.stdout).toMatch(/Next charge from DIEM/);

    // Every change is a ledger row, with its note.
    const db = openStore(databasePath(dataDir));
    try {
      const grants = listLedgerEntries(db, { accountId, kind: "grant" }).map(({ currency, deltaMicros, note }) => ({ currency, micros: deltaMicros, note }));
      expect(grants).toEqual([
        { currency: "USD", micros: 2_500_000, note: "granted with hearth credits grant" },
        { currency: "BUNDLED_CREDITS", micros: 1_000_000, note: "launch promo" },
        { currency: "DIEM", micros: 2_000_000, note: "granted with hearth credits grant" },
      ]);
    } finally {
      db.close();
    }
  });

  it("refuses ambiguous or invalid commands with a message and a non-zero exit", { timeout: 120_000 }, async () => {
    const dataDir = tempDir();
    const { keyId, accountId } = await createKey(dataDir, "bob");
    const cases: [string[], RegExp][] = [
      [["credits", "grant", "--account", accountId, "--key", keyId, "--usd", "1"], /exactly one of --key and --account/],
      [["credits", "grant", "--usd", "1"], /exactly one of --key and --account/],
      [["credits", "grant", "--account", accountId, "--usd", "1", "--diem", "1"], /exactly one of --usd, --diem and --bundled/],
      [["credits", "grant", "--account", accountId], /exactly one of --usd, --diem and --bundled/],
      [["credits", "grant", "--account", accountId, "--usd", "-1"], /non-negative number/],
      [["credits", "grant", "--account", accountId, "--usd", "0"], /at least 0\.000001/],
      [["credits", "grant", "--account", "no-such-account", "--usd", "1"], /no account with id no-such-account/],
      [["credits", "grant", "--key", "no-such-key", "--usd", "1"], /no API key with id no-such-key/],
      [["credits", "stake", "--account", accountId], /--diem/],
      [["credits", "balance", "--account", "no-such-account"], /no account with id/],
      [["usage", "export", "--since", "last week"], /ISO 8601/],
      [["usage", "export", "--account", "no-such-account"], /no account with id/],
    ];
    for (const [args, message] of cases) {
      const result = await hearth([...args, "--data-dir", dataDir]);
      expect(result.status, args.join(" ")).not.toBe(0);
      expect(result.stderr, args.join(" ")).toMatch(message);
    }
    expect((await balanceOf(dataDir, accountId)).balances).toEqual({ diem: null, usd: 0 });
  });

  it("exports the ledger's charges as exactly the CSV the API serves", { timeout: 120_000 }, async () => {
    const dataDir = tempDir();
    const registry = join(dataDir, "models.config.json");
    const pricing = { input: { usd: 1, diem: 1 }, output: { usd: 2, diem: 2 } };
    writeFileSync(
      registry,
      JSON.stringify({ models: [{ id: "tiny-chat", type: "text", backend: "llama", file: tinyChatPath(), llama: { contextSize: 1024, sequences: 2, threads: 1 }, pricing }] }),
    );
    const alice = await createKey(dataDir, "alice");
    const bob = await createKey(dataDir, "bob");
    expect((await hearth(["credits", "grant", "--account", alice.accountId, "--usd", "1", "--data-dir", dataDir])).status).toBe(0);

    let apiCsv: string;
    const { child, baseUrl } = await hearthServe(["--port", "0", "--data-dir", dataDir, "--config", registry]);
    try {
      for (const content of ["one", "two"]) {
        const res = await fetch(`${baseUrl}/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${alice.secret}`, "content-type": "application/json" },
          // Greedy: a random draw could end the reply before its first token, leaving no output charge.
          body: JSON.stringify({ model: "tiny-chat", messages: [{ role: "user", content }], max_tokens: 3, temperature: 0 }),
        });
        expect(res.status).toBe(200);
      }
      const res = await fetch(`${baseUrl}/billing/usage-history`, { headers: { authorization: `Bearer ${alice.secret}`, accept: "text/csv" } });
      expect(res.status).toBe(200);
      apiCsv = await res.text();
    } finally {
      child.kill("SIGTERM");
      expect(await exited(child)).toBe(0);
    }
    const lines = apiCsv.trimEnd().split("\r\n");
    expect(lines[0]).toBe(USAGE_CSV_COLUMNS.join(","));
    expect(lines).toHaveLength(5);

    const exported = await hearth(["usage", "export", "--data-dir", dataDir]);
    expect(exported.status, exported.stderr).toBe(0);
    expect(exported.stdout).toBe(apiCsv);
    expect((await hearth(["usage", "export", "--account", alice.accountId, "--since", "2000-01-01", "--data-dir", dataDir])).stdout).toBe(apiCsv);

    const headerOnly = `${USAGE_CSV_COLUMNS.join(",")}\r\n`;
    expect((await hearth(["usage", "export", "--account", bob.accountId, "--data-dir", dataDir])).stdout).toBe(headerOnly);
    expect((await hearth(["usage", "export", "--until", "2000-01-01", "--data-dir", dataDir])).stdout).toBe(headerOnly);
    const future = new Date(Date.now() + 86_400_000).toISOString();
    expect((await hearth(["usage", "export", "--since", future, "--data-dir", dataDir])).stdout).toBe(headerOnly);

    // What was charged is what the balance lost.
    const charged = lines.slice(1).reduce((sum, line) => sum + Number(line.split(",")[4]), 0);
    expect((await balanceOf(dataDir, alice.accountId)).balances.usd).toBeCloseTo(1 - charged, 6);
  });
});
