import { usageCsvHeader } from "../../src/billing/usageReport.js";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hearth } from "../helpers/cli.js";
import { tinyChatPath } from "../helpers/testServer.js";

/** Any ANSI escape sequence (colours, cursor moves a progress bar would use). */
const ANSI = "\u001b[";

let dataDir: string;
let registry: string;
let common: string[];
beforeAll(() => {
  dataDir = mkdtempSync(join(tmpdir(), "hearth-cli-json-"));
  registry = join(dataDir, "models.config.json");
  writeFileSync(
    registry,
    JSON.stringify({ models: [{ id: "tiny-chat", type: "text", backend: "llama", file: tinyChatPath(), llama: { contextSize: 1024, sequences: 2, threads: 1 } }] }),
  );
  common = ["--data-dir", dataDir];
});
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/** Runs the CLI with its output piped (as here) and checks it stayed plain text. */
async function run(args: string[]) {
  const result = await hearth(args);
  expect(result.stdout, `${args.join(" ")} stdout`).not.toMatch(ANSI);
  expect(result.stderr, `${args.join(" ")} stderr`).not.toMatch(ANSI);
  return result;
}

describe("hearth listing commands with --json, and plain output in a pipe", () => {
  let secret: string;
  let keyId: string;
  let accountId: string;

  it("keys create and keys list: plain text in a pipe; --json lists the key's fields and never its secret", async () => {
    const created = await run(["keys", "create", "--name", "json-alice", "--usd", "3", "--diem", "1.5", ...common]);
    expect(created.status).toBe(0);
    secret = created.stdout.trim().split("\n").at(-1)!;
    expect(secret).toMatch(/^hth_/);

    const listed = await run(["keys", "list", "--json", ...common]);
    expect(listed.status).toBe(0);
    const keys = JSON.parse(listed.stdout) as Record<string, unknown>[];
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatchObject({
      id: expect.any(String),
      keyType: "INFERENCE",
      description: "json-alice",
      accountId: expect.any(String),
      last6: secret.slice(-6),
      createdAt: expect.any(Number),
    });
    expect(listed.stdout).not.toContain(secret);
    expect(Object.keys(keys[0]!).some((k) => /secret|hash/i.test(k))).toBe(false);
    keyId = keys[0]!.id as string;
    accountId = keys[0]!.accountId as string;

    const table = await run(["keys", "list", ...common]);
    const [header, row] = table.stdout.trimEnd().split("\n");
    expect(header).toMatch(/^ID\s+TYPE\s+NAME\s+KEY\s+ACCOUNT\s+CREATED\s+LAST USED\s+STATE$/);
    expect(row).toContain(keyId);
    expect(row).toMatch(/active$/);
  });

  it("credits balance --json: the /billing/balance record plus details, as numbers", async () => {
    const result = await run(["credits", "balance", "--account", accountId, "--json", ...common]);
    expect(result.status).toBe(0);
    const balance = JSON.parse(result.stdout) as Record<string, any>;
    expect(balance).toMatchObject({
      accountId,
      canConsume: true,
      consumptionCurrency: "DIEM",
      balances: { usd: 3, diem: 1.5 },
      details: { usd: 3, bundledCredits: 0, diem: 1.5, stakedDiem: 0, held: { usd: 0, bundledCredits: 0, diem: 0 } },
    });
    const text = await run(["credits", "balance", "--account", accountId, ...common]);
    expect(text.stdout).toMatch(/^USD\s+3\.000000 /m);
  });

  it("characters list --json: file and CLI characters with their fields", async () => {
    writeFileSync(join(dataDir, "characters.json"), JSON.stringify({ characters: [{ slug: "bard", name: "Bard", model: "tiny-chat", systemPrompt: "You sing." }] }));
    const added = await run([
      "characters",
      "add",
      "--slug",
      "chef",
      "--name",
      "Chef",
      "--model",
      "tiny-chat",
      "--system-prompt",
      "You cook.",
      "--tags",
      "food,fun",
      "--config",
      registry,
      ...common,
    ]);
    expect(added.status, added.stderr).toBe(0);
    const listed = await run(["characters", "list", "--json", "--config", registry, ...common]);
    expect(listed.status).toBe(0);
    const characters = JSON.parse(listed.stdout) as Record<string, unknown>[];
    expect(characters.map((c) => c.slug).sort()).toEqual(["bard", "chef"]);
    expect(characters.find((c) => c.slug === "chef")).toMatchObject({ name: "Chef", modelId: "tiny-chat", source: "store", tags: ["food", "fun"], systemPrompt: "You cook." });
    expect(characters.find((c) => c.slug === "bard")).toMatchObject({ source: "file", modelId: "tiny-chat" });
  });

  it("usage export in a pipe: the CSV on stdout and no progress bar on stderr", async () => {
    const result = await run(["usage", "export", ...common]);
    expect(result.status).toBe(0);
    // No usage yet: exactly the header line.
    expect(result.stdout).toBe(usageCsvHeader());
    expect(result.stderr).toBe("");
  });

  it("errors are plain in a pipe too", async () => {
    const result = await run(["credits", "balance", "--account", "no-such-account", ...common]);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/^hearth: no account with id no-such-account/);
  });
});
