import { readFileSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import { ConfigError, describeIssues } from "../config/ConfigError.js";
import { ModelsConfig, resolveUpstream } from "../config/modelRegistry.js";
import { BACKENDS } from "../engines/registry.js";

/**
 * The registry as Hearth checks it: config/'s schema (fields, ids, aliases, pricing) plus what
 * each backend's descriptor says about an entry. The backend checks live here, not in config/,
 * because the descriptors import the entry type: config/ stays below engines/.
 */
export const CheckedModelsConfig = ModelsConfig.superRefine((config, ctx) => {
  config.models.forEach((model, index) => {
    const backend = BACKENDS[model.backend];
    for (const problem of backend.entryProblems(model)) ctx.addIssue({ code: "custom", path: ["models", index, problem.path], message: problem.message });
    if (!backend.serves.includes(model.type))
      ctx.addIssue({
        code: "custom",
        path: ["models", index, "backend"],
        message: `the ${model.backend} backend serves ${listInWords(backend.serves)} models, not ${model.type}`,
      });
    if (model.voiceCloning && !("voiceCloning" in backend.settings))
      ctx.addIssue({ code: "custom", path: ["models", index, "voiceCloning"], message: "voice cloning runs on Kokoro-style models (backend kokoro)" });
  });
});

/** Reads and validates models.config.json; a bad file stops start-up with the offending field named. */
export function loadModelsConfig(configPath: string, dataDir: string, env: NodeJS.ProcessEnv = process.env): ModelsConfig {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(configPath, "utf8"));
  } catch (error) {
    throw new ConfigError(`${configPath}: ${(error as Error).message}`);
  }
  const parsed = CheckedModelsConfig.safeParse(json);
  if (!parsed.success) throw new ConfigError(describeIssues(configPath, parsed.error));
  const base = dirname(configPath);
  for (const model of parsed.data.models) {
    if (model.file) model.file = resolveModelPath(model.file, base, dataDir);
    if (model.voiceCloning) model.voiceCloning.encoder = resolveModelPath(model.voiceCloning.encoder, base, dataDir);
    if (model.upstream) resolveUpstream(model.upstream, env);
    if (model.image.safetyChecker) model.image.safetyChecker = resolveModelPath(model.image.safetyChecker, base, dataDir);
  }
  return parsed.data;
}

function resolveModelPath(file: string, base: string, dataDir: string): string {
  const expanded = file.replaceAll("{dataDir}", dataDir);
  return isAbsolute(expanded) ? expanded : resolve(base, expanded);
}

/** "a", "a and b", "a, b and c". */
function listInWords(items: readonly string[]): string {
  return items.length < 3 ? items.join(" and ") : `${items.slice(0, -1).join(", ")} and ${items.at(-1)}`;
}
