import type { Command } from "commander";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, isAbsolute, relative, resolve } from "node:path";
import { ConfigError } from "../config/ConfigError.js";
import { ModelEntry } from "../config/modelRegistry.js";
import { CheckedModelsConfig, loadModelsConfig } from "../models/loadModelsConfig.js";
import { adminKeyFromEnv, loadServerConfig, readSetting } from "../config/serverSettings.js";
import { formatBytes } from "../models/formatBytes.js";
import { backendOf } from "../engines/registry.js";
import { addSettingOption, settingFlags, type SettingFlags } from "./options.js";
import { printTable } from "./keys.js";

const mib = (bytes: number | null | undefined) => (bytes == null ? "-" : formatBytes(bytes));

export function registerModelsCommand(program: Command): void {
  const models = program.command("models").description("inspect the model registry (models.config.json) and a running server's models");
  const list = models
    .command("list")
    .description("list the configured models with their memory estimate; with --url, a running server's models: state, memory, requests, queue")
    .option("--json", "print JSON instead of a table")
    .option("--url <url>", "a running server's API base URL (e.g. http://127.0.0.1:8080/api/v1)")
    .option("--key <key>", "the operator's API key for --url (env HEARTH_ADMIN_KEY)");
  addSettingOption(list, "configPath");
  addSettingOption(list, "dataDir");
  list.action(async (flags: SettingFlags & { json?: boolean; url?: string; key?: string }) => {
    if (flags.url) return listRunning(flags.url, flags.key ?? adminKeyFromEnv(), flags.json === true);
    const config = loadServerConfig(settingFlags(flags));
    const registry = loadModelsConfig(config.configPath, config.dataDir);
    // Loaded on demand: the estimate reads GGUF headers through node-llama-cpp.
    const { estimateMemory } = await import("../models/estimateMemory.js");
    const rows = await Promise.all(
      registry.models.map(async (m) => {
        const present = m.file ? existsSync(m.file) : true;
        const backend = backendOf(m);
        const servable = backend.servable(m);
        const remoteHost = backend.remoteHost?.(m);
        const state = !servable.servable
          ? `not served: ${servable.reason}`
          : remoteHost
            ? `relayed to ${remoteHost}`
            : present
              ? "present"
              : m.generate
                ? "generated on start"
                : "missing";
        const stats = m.file && present ? statSync(m.file) : undefined;
        const memory = present && servable.servable ? await estimateMemory(m, "auto").catch(() => null) : null;
        return {
          id: m.id,
          type: m.type,
          backend: m.backend,
          file: m.file ?? m.upstream?.baseUrl ?? "",
          state,
          // Model directories (ONNX layouts) have no single size.
          sizeBytes: stats?.isFile() ? stats.size : null,
          memory,
          keepAliveSeconds: m.keepAlive ?? config.keepAlive,
        };
      }),
    );
    if (flags.json) {
      process.stdout.write(`${JSON.stringify({ config: config.configPath, models: rows }, null, 2)}\n`);
      return;
    }
    process.stdout.write(`Registry: ${config.configPath}\n`);
    printTable(
      ["ID", "TYPE", "BACKEND", "STATE", "RAM (EST.)", "VRAM (EST.)", "FILE"],
      rows.map((r) => [r.id, r.type, r.backend, r.state, mib(r.memory?.ramBytes), mib(r.memory?.vramBytes), r.file]),
    );
  });

  const add = models
    .command("add")
    .description("inspect a local GGUF file or ONNX model directory and add it to the registry (no network)")
    .argument("<path>", "a .gguf file or a model directory")
    .option("--id <id>", "the model id (default: from the file name)")
    .option("--json", "print the inspection and the entry as JSON");
  add.option(
    "--config <file>",
    "the registry to append to, created if missing; a relative path is taken from the current directory (env HEARTH_CONFIG, default ./models.config.json)",
  );
  add.action(async (path: string, flags: SettingFlags & { id?: string; json?: boolean }) => {
    const configPath = resolve(readSetting("configPath", settingFlags(flags)));
    const file = resolve(path);
    const { inspectModel, idFromPath } = await import("../models/inspectModel.js");
    const inspection = await inspectModel(file);
    const raw = existsSync(configPath) ? readRegistry(configPath) : { models: [] as unknown[] };
    const id = flags.id ?? idFromPath(file);
    const fromConfig = relative(dirname(configPath), file);
    const entry = { id, ...inspection.entry, file: fromConfig.startsWith("..") || isAbsolute(fromConfig) ? file : fromConfig };
    const checked = ModelEntry.safeParse(entry);
    if (!checked.success) throw new ConfigError(checked.error.issues.map((i) => `${i.path.join(".") || "entry"}: ${i.message}`).join("\n"));
    if (raw.models.some((m) => (m as { id?: unknown }).id === id)) throw new ConfigError(`${configPath}: a model with id "${id}" already exists (choose another with --id)`);
    const next = { ...raw, models: [...raw.models, entry] };
    const whole = CheckedModelsConfig.safeParse(next);
    if (!whole.success) throw new ConfigError(whole.error.issues.map((i) => `${configPath}: ${i.path.join(".")}: ${i.message}`).join("\n"));
    writeFileSync(configPath, `${JSON.stringify(next, null, 2)}\n`);
    if (flags.json) {
      process.stdout.write(`${JSON.stringify({ config: configPath, backend: inspection.backend, type: inspection.type, facts: inspection.facts, entry }, null, 2)}\n`);
      return;
    }
    process.stdout.write(`${file}: ${inspection.type} model for the ${inspection.backend} backend\n`);
    for (const [name, value] of Object.entries(inspection.facts)) process.stdout.write(`  ${name}: ${value}\n`);
    process.stdout.write(`Added "${id}" to ${configPath}:\n${JSON.stringify(entry, null, 2)}\n`);
  });
}

function readRegistry(path: string): { models: unknown[]; [key: string]: unknown } {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new ConfigError(`${path}: ${(error as Error).message}`);
  }
  const registry = json as { models?: unknown };
  if (typeof json !== "object" || json === null || !Array.isArray(registry.models)) throw new ConfigError(`${path}: expected { "models": [...] }`);
  return json as { models: unknown[] };
}

/** A running server's view, through GET /admin/models. */
async function listRunning(url: string, key: string | undefined, json: boolean): Promise<void> {
  if (!key) throw new Error("--url needs the operator's API key: --key or HEARTH_ADMIN_KEY");
  const base = url.replace(/\/+$/, "");
  const response = await fetch(`${base}/admin/models`, { headers: { authorization: `Bearer ${key}` } });
  // biome-ignore lint/suspicious/noExplicitAny: a server's JSON answer, printed as it comes
  const body = (await response.json().catch(() => ({}))) as Record<string, any>;
  if (!response.ok) throw new Error(`${base}/admin/models answered ${response.status}: ${body.error ?? response.statusText}`);
  if (json) {
    process.stdout.write(`${JSON.stringify({ url: base, models: body.data, budget: body.budget }, null, 2)}\n`);
    return;
  }
  const limit = (b: { limitBytes: number | null; usedBytes: number }) => `${mib(b.usedBytes)} of ${b.limitBytes === null ? "unlimited" : mib(b.limitBytes)}`;
  process.stdout.write(`Server: ${base}\nRAM: ${limit(body.budget.ram)}; VRAM: ${limit(body.budget.vram)}\n`);
  printTable(
    ["ID", "TYPE", "BACKEND", "STATE", "RAM", "VRAM", "IN FLIGHT", "QUEUE", "KEEP-ALIVE"],
    // biome-ignore lint/suspicious/noExplicitAny: a server's JSON answer, printed as it comes
    (body.data as any[]).map((m) => [
      m.id,
      m.type,
      m.backend,
      m.state === "failed" ? `failed: ${m.error}` : m.state,
      mib(m.memory?.ramBytes),
      mib(m.memory?.vramBytes),
      String(m.inFlight),
      m.queue ? `${m.queue.busy} busy, ${m.queue.waiting} waiting` : "-",
      m.keepAliveSeconds < 0 ? "forever" : `${m.keepAliveSeconds} s`,
    ]),
  );
}
