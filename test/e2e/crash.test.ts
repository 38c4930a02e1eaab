import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { getBalances, ledgerTotals } from "../../src/store/ledger.js";
import { databasePath, openStore } from "../../src/store/Store.js";
import { exited, hearth, hearthServe } from "../helpers/cli.js";
import { tinyChatPath } from "../helpers/testServer.js";
import { countReservations } from "../../src/store/reservations.js";
import { listAccountsWithKeyCounts } from "../../src/store/accounts.js";

const dataDir = mkdtempSync(join(tmpdir(), "hearth-crash-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

it("SIGKILL in the middle of streaming requests leaves no hold behind and balances equal to the ledger after restart", async () => {
  const registry = join(dataDir, "models.config.json");
  writeFileSync(
    registry,
    JSON.stringify({
      models: [
        {
          id: "tiny-chat",
          type: "text",
          backend: "llama",
          file: tinyChatPath(),
          llama: { contextSize: 4096, sequences: 4, threads: 1 },
          pricing: { input: { usd: 1, diem: 1 }, output: { usd: 2, diem: 2 } },
        },
      ],
    }),
  );
  const created = await hearth(["keys", "create", "--name", "crash", "--usd", "1", "--data-dir", dataDir]);
  const key = created.stdout.trim().split("\n").at(-1)!;
  const args = ["--port", "0", "--data-dir", dataDir, "--config", registry];
  const first = await hearthServe(args);
  const chat = (body: Record<string, unknown>) =>
    fetch(`${first.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "tiny-chat", messages: [{ role: "user", content: "go" }], temperature: 0, ...body }),
    });
  // One request completes and is charged before the crash.
  const done = (await (await chat({ max_tokens: 5 })).json()) as { cost: { usd: number } };
  expect(done.cost.usd).toBeGreaterThan(0);

  const streams = await Promise.all([0, 1, 2].map(() => chat({ max_tokens: 3000, stream: true })));
  for (const res of streams) {
    const reader = res.body!.getReader();
    await reader.read();
    await reader.read();
  }
  const db = openStore(databasePath(dataDir));
  const account = listAccountsWithKeyCounts(db, Date.now(), 1)[0]!.id;
  expect(countReservations(db)).toBe(3);
  db.close();

  first.child.kill("SIGKILL");
  expect(await exited(first.child)).toBe(null);

  const second = await hearthServe(args);
  try {
    const after = openStore(databasePath(dataDir));
    expect(countReservations(after)).toBe(0);
    const balances = getBalances(after, account);
    expect(ledgerTotals(after, account)).toEqual(balances);
    // Only the completed request was charged: nothing was lost and nothing counted twice.
    expect(balances.USD).toBe(1_000_000 - Math.round(done.cost.usd * 1e6));
    after.close();
  } finally {
    second.child.kill("SIGTERM");
    await exited(second.child);
  }
});
