import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, describe, expect, it } from "vitest";
import { exited, hearth, hearthServe } from "../helpers/cli.js";
import { tinyChatPath } from "../helpers/testServer.js";

const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "hearth-cli-"));
  dirs.push(dir);
  return dir;
};
afterAll(() =>
  dirs.forEach((d) => {
    rmSync(d, { recursive: true, force: true });
  }),
);

/** An admin key made with the CLI, as an operator would (its secret is the output's last line). */
async function createAdminKey(dataDir: string): Promise<string> {
  const created = await hearth(["keys", "create", "--name", "ops", "--admin", "--data-dir", dataDir]);
  return created.stdout.trim().split("\n").at(-1)!;
}

/** A model's state as GET /admin/models reports it. */
async function modelState(baseUrl: string, secret: string, id: string): Promise<string | undefined> {
  const res = await fetch(`${baseUrl}/admin/models`, { headers: { authorization: `Bearer ${secret}` } });
  const status = (await res.json()) as { data: { id: string; state: string }[] };
  return status.data.find((m) => m.id === id)?.state;
}

/** A registry with the pre-generated tiny model, so the tests do not regenerate it. */
function writeRegistry(dir: string, extra: Record<string, unknown> = {}) {
  const path = join(dir, "models.config.json");
  writeFileSync(
    path,
    JSON.stringify({ models: [{ id: "tiny-chat", type: "text", backend: "llama", file: tinyChatPath(), llama: { contextSize: 1024, sequences: 2, threads: 1 }, ...extra }] }),
  );
  return path;
}

describe("the hearth CLI", () => {
  it("explains every option of every command in --help", async () => {
    const expectations: [string[], string[]][] = [
      [["--help"], ["serve", "keys", "fixtures", "models", "characters"]],
      [
        ["serve", "--help"],
        ["--host", "HEARTH_HOST", "--port", "HEARTH_PORT", "--data-dir", "HEARTH_DATA_DIR", "--config", "HEARTH_CONFIG"],
      ],
      [
        ["keys", "create", "--help"],
        ["--name", "--admin", "--usd", "--diem", "--data-dir", "--account"],
      ],
      [
        ["keys", "list", "--help"],
        ["--json", "--data-dir"],
      ],
      [
        ["keys", "revoke", "--help"],
        ["<id>", "--data-dir"],
      ],
      [["fixtures", "--help"], ["--out"]],
      [
        ["models", "list", "--help"],
        ["--config", "--json"],
      ],
      [
        ["characters", "add", "--help"],
        ["--slug", "--name", "--model", "--system-prompt", "--example", "--tags", "--data-dir", "--config"],
      ],
      [
        ["characters", "list", "--help"],
        ["--json", "--data-dir"],
      ],
      [
        ["characters", "remove", "--help"],
        ["<slug>", "--data-dir"],
      ],
    ];
    for (const [args, words] of expectations) {
      const { status, stdout } = await hearth(args);
      expect(status, args.join(" ")).toBe(0);
      for (const word of words) expect(stdout, `${args.join(" ")} mentions ${word}`).toContain(word);
    }
  });

  it("keys create --gateway makes an inference key for a gateway (never an admin one), listed as GATEWAY", async () => {
    const dataDir = tempDir();
    const created = await hearth(["keys", "create", "--name", "pool gateway", "--gateway", "--usd", "50", "--data-dir", dataDir]);
    expect(created.status).toBe(0);
    expect(created.stdout).toMatch(/^Created gateway key /);
    const keys = JSON.parse((await hearth(["keys", "list", "--json", "--data-dir", dataDir])).stdout) as { keyType: string; gateway: boolean }[];
    expect(keys).toMatchObject([{ keyType: "INFERENCE", gateway: true }]);
    expect((await hearth(["keys", "list", "--data-dir", dataDir])).stdout).toMatch(/\bGATEWAY\b/);
    const refused = await hearth(["keys", "create", "--name", "x", "--gateway", "--admin", "--data-dir", dataDir]);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/--gateway makes an inference key/);
  });

  it("creates, lists and revokes keys; the secret is the last line of stdout", async () => {
    const dataDir = tempDir();
    const registry = writeRegistry(dataDir);
    const created = await hearth(["keys", "create", "--name", "alice", "--admin", "--usd", "2.5", "--diem", "1", "--data-dir", dataDir]);
    expect(created.status).toBe(0);
    const secret = created.stdout.trim().split("\n").at(-1)!;
    expect(secret).toMatch(/^hth_[A-Za-z0-9_-]{43}$/);

    const listed = await hearth(["keys", "list", "--json", "--data-dir", dataDir]);
    const keys = JSON.parse(listed.stdout) as { id: string; keyType: string; description: string }[];
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatchObject({ keyType: "ADMIN", description: "alice" });
    expect(listed.stdout).not.toContain(secret);

    const { child, baseUrl } = await hearthServe(["--port", "0", "--data-dir", dataDir, "--config", registry]);
    try {
      const client = new OpenAI({ apiKey: secret, baseURL: baseUrl, maxRetries: 0 });
      // Greedy: the random model never ends its turn on the first token (at temperature 0.8 it does about 1% of the time).
      const completion = await client.chat.completions.create({ model: "tiny-chat", messages: [{ role: "user", content: "hi" }], max_tokens: 3, temperature: 0 });
      expect(completion.usage!.completion_tokens).toBeGreaterThan(0);
      // Revoking through the CLI while the server runs takes effect on the next request.
      expect((await hearth(["keys", "revoke", keys[0]!.id, "--data-dir", dataDir])).status).toBe(0);
      await expect(client.chat.completions.create({ model: "tiny-chat", messages: [{ role: "user", content: "hi" }], max_tokens: 3 })).rejects.toBeInstanceOf(
        OpenAI.AuthenticationError,
      );
    } finally {
      child.kill("SIGTERM");
      expect(await exited(child)).toBe(0);
    }
    expect((await hearth(["keys", "revoke", keys[0]!.id, "--data-dir", dataDir])).status).toBe(1);
  });

  it("serve --preload loads the named models at start-up and reports one it cannot load", async () => {
    const dataDir = tempDir();
    const registry = writeRegistry(dataDir);
    const secret = await createAdminKey(dataDir);
    const { child, baseUrl, output } = await hearthServe(["--port", "0", "--data-dir", dataDir, "--config", registry, "--preload", "tiny-chat,nope"]);
    try {
      await expect.poll(output, { timeout: 30_000 }).toMatch(/Could not load nope: no model "nope"/);
      // No memory budget: nothing was estimated before the load; the size is what llama.cpp reports
      // for the loaded model (0.55 MiB of weights and the KV cache of 4 x 2,048 cells).
      expect(output()).toMatch(/Loaded tiny-chat \([\d.]+ MiB\) in [\d.]+ s/);
      // Piped output: no progress bar, no colour codes.
      expect(output()).not.toContain("\u001b[");
      expect(await modelState(baseUrl, secret, "tiny-chat")).toBe("loaded");
    } finally {
      child.kill("SIGTERM");
      expect(await exited(child)).toBe(0);
    }
  });

  it.runIf(process.platform === "linux")("serve loads llama.cpp's binding in the background after it starts, before any request, and no model", async () => {
    const dataDir = tempDir();
    const registry = writeRegistry(dataDir);
    const secret = await createAdminKey(dataDir);
    const { child, baseUrl } = await hearthServe(["--port", "0", "--data-dir", dataDir, "--config", registry]);
    try {
      // node-llama-cpp's JavaScript is imported with the server; its native library only by getLlama.
      const mapsLlama = () => readFileSync(`/proc/${child.pid}/maps`, "utf8").includes("libllama");
      await expect.poll(mapsLlama, { timeout: 30_000, interval: 100 }).toBe(true);
      expect(await modelState(baseUrl, secret, "tiny-chat")).toBe("unloaded");
    } finally {
      child.kill("SIGTERM");
      expect(await exited(child)).toBe(0);
    }
  });

  it("writes the demo fixtures and lists the registry", async () => {
    const out = tempDir();
    const result = await hearth(["fixtures", "--out", out]);
    expect(result.status).toBe(0);
    expect(existsSync(join(out, "tiny-chat.gguf"))).toBe(true);
    const registry = writeRegistry(out);
    const listed = JSON.parse((await hearth(["models", "list", "--json", "--config", registry])).stdout);
    expect(listed.models[0]).toMatchObject({ id: "tiny-chat", type: "text", backend: "llama", state: "present" });
  });

  it("adds, lists and removes characters; a running server applies one on the next request", async () => {
    const dataDir = tempDir();
    const registry = writeRegistry(dataDir);
    writeFileSync(join(dataDir, "characters.json"), JSON.stringify({ characters: [{ slug: "bard", name: "Bard", model: "tiny-chat", systemPrompt: "You sing." }] }));
    const common = ["--data-dir", dataDir, "--config", registry];
    const added = await hearth([
      "characters",
      "add",
      "--slug",
      "pirate",
      "--name",
      "Captain",
      "--model",
      "tiny-chat",
      "--system-prompt",
      "You are a pirate.",
      "--tags",
      "fun,sea",
      "--example",
      "user:Hi",
      "--example",
      "assistant:Ahoy!",
      ...common,
    ]);
    expect(added.status, added.stderr).toBe(0);
    expect((await hearth(["characters", "add", "--slug", "x", "--name", "X", "--model", "nope", "--system-prompt", "p", ...common])).stderr).toContain("no text model");
    expect((await hearth(["characters", "add", "--slug", "bard", "--name", "X", "--model", "tiny-chat", "--system-prompt", "p", ...common])).stderr).toContain("characters.json");
    expect((await hearth(["characters", "add", "--slug", "Bad Slug", "--name", "X", "--model", "tiny-chat", "--system-prompt", "p", ...common])).status).toBe(1);
    const listed = JSON.parse((await hearth(["characters", "list", "--json", ...common])).stdout) as { slug: string; source: string; exampleMessages: unknown[]; tags: string[] }[];
    expect(listed.map((c) => [c.slug, c.source])).toEqual([
      ["bard", "file"],
      ["pirate", "store"],
    ]);
    expect(listed[1]).toMatchObject({
      tags: ["fun", "sea"],
      exampleMessages: [
        { role: "user", content: "Hi" },
        { role: "assistant", content: "Ahoy!" },
      ],
    });

    const secret = (await hearth(["keys", "create", "--name", "c", "--data-dir", dataDir])).stdout.trim().split("\n").at(-1)!;
    const { child, baseUrl } = await hearthServe(["--port", "0", ...common]);
    try {
      const get = (slug: string) => fetch(`${baseUrl}/characters/${slug}`, { headers: { authorization: `Bearer ${secret}` } });
      expect((await get("bard")).status).toBe(200);
      expect((await get("pirate")).status).toBe(200);
      expect((await hearth(["characters", "remove", "pirate", "--data-dir", dataDir])).status).toBe(0);
      // Removed while the server runs: gone on the next request.
      expect((await get("pirate")).status).toBe(404);
    } finally {
      child.kill("SIGTERM");
      await exited(child);
    }
    expect((await hearth(["characters", "remove", "pirate", "--data-dir", dataDir])).status).toBe(1);
  });

  it("stops start-up on a bad registry with a message naming the field", async () => {
    const dir = tempDir();
    const registry = writeRegistry(dir, { llama: { contextSize: "big" } });
    const result = await hearth(["serve", "--port", "0", "--data-dir", dir, "--config", registry]);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain("models.0.llama.contextSize");
  });

  it("on SIGTERM finishes the stream in flight, refuses new connections and exits cleanly", async () => {
    const dataDir = tempDir();
    const registry = writeRegistry(dataDir);
    const secret = (await hearth(["keys", "create", "--name", "bob", "--data-dir", dataDir])).stdout.trim().split("\n").at(-1)!;
    const { child, baseUrl } = await hearthServe(["--port", "0", "--data-dir", dataDir, "--config", registry]);
    const client = new OpenAI({ apiKey: secret, baseURL: baseUrl, maxRetries: 0 });
    const stream = await client.chat.completions.create({ model: "tiny-chat", messages: [{ role: "user", content: "hi" }], max_tokens: 200, temperature: 0, stream: true });
    child.kill("SIGTERM");
    let finish: string | null | undefined;
    for await (const chunk of stream) finish ??= chunk.choices[0]?.finish_reason;
    expect(finish).toBe("length");
    expect(await exited(child)).toBe(0);
    await expect(fetch(`${baseUrl}/models`)).rejects.toThrow();
  });
});
