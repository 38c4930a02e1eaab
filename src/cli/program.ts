import { Command } from "commander";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PACKAGE_ROOT } from "../config/packageRoot.js";
import { registerCreditsCommands } from "./credits.js";
import { registerCharactersCommand } from "./characters.js";
import { registerFixturesCommand } from "./fixtures.js";
import { registerKeysCommand } from "./keys.js";
import { registerModelsCommand } from "./models.js";
import { registerServeCommand } from "./serve.js";

const { version } = JSON.parse(readFileSync(join(PACKAGE_ROOT, "package.json"), "utf8")) as { version: string };

/** The `hearth` command and its subcommands, without running anything: main.ts parses argv with it, docs:cli prints its help. */
export function buildProgram(): Command {
  const program = new Command("hearth")
    .description("Hearth: a self-hosted inference node serving chat, speech, images, embeddings and credits from local models.")
    .version(version)
    .showHelpAfterError();
  registerServeCommand(program);
  registerKeysCommand(program);
  registerCreditsCommands(program);
  registerFixturesCommand(program);
  registerModelsCommand(program);
  registerCharactersCommand(program);
  return program;
}
