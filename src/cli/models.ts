import type { Command } from "commander";
import { existsSync, statSync } from "node:fs";
import { loadModelsConfig, loadServerConfig } from "../config.js";
import { isServable } from "../models/isServable.js";
import { addSettingOption, settingFlags, type SettingFlags } from "./options.js";
import { printTable } from "./keys.js";

export function registerModelsCommand(program: Command): void {
  const models = program.command("models").description("inspect the model registry (models.config.json)");
  const list = models.command("list").description("list the configured models and whether their files are present").option("--json", "print JSON instead of a table");
  addSettingOption(list, "configPath");
  addSettingOption(list, "dataDir");
  list.action((flags: SettingFlags & { json?: boolean }) => {
    const config = loadServerConfig(settingFlags(flags));
    const registry = loadModelsConfig(config.configPath, config.dataDir);
    const rows = registry.models.map((m) => {
      const present = m.file ? existsSync(m.file) : true;
      const servable = isServable(m);
      const state = !servable.servable
        ? `not served: ${servable.reason}`
        : m.backend === "upstream"
          ? `relayed to ${new URL(m.upstream!.baseUrl!).host}`
          : present
            ? "present"
            : m.generate
              ? "generated on start"
              : "missing";
      const stats = m.file && present ? statSync(m.file) : undefined;
      return {
        id: m.id,
        type: m.type,
        backend: m.backend,
        file: m.file ?? m.upstream?.baseUrl ?? "",
        state,
        // Model directories (ONNX layouts) have no single size.
        sizeBytes: stats?.isFile() ? stats.size : null,
      };
    });
    if (flags.json) {
      process.stdout.write(`${JSON.stringify({ config: config.configPath, models: rows }, null, 2)}\n`);
      return;
    }
    process.stdout.write(`Registry: ${config.configPath}\n`);
    printTable(["ID", "TYPE", "BACKEND", "STATE", "FILE"], rows.map((r) => [r.id, r.type, r.backend, r.state, r.file]));
  });
}
