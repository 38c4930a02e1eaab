import { Command } from "commander";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ConfigError } from "../config/ConfigError.js";
import { PACKAGE_ROOT } from "../config/packageRoot.js";
import { registerCreditsCommands } from "./credits.js";
import { registerCharactersCommand } from "./characters.js";
import { registerFixturesCommand } from "./fixtures.js";
import { registerKeysCommand } from "./keys.js";
import { registerModelsCommand } from "./models.js";
import { registerServeCommand } from "./serve.js";
import { err } from "./ui.js";

const { version } = JSON.parse(readFileSync(join(PACKAGE_ROOT, "package.json"), "utf8")) as { version: string };

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

try {
  await buildProgram().parseAsync(process.argv);
} catch (error) {
  // Configuration mistakes are the user's to fix: say what is wrong, without a stack trace.
  if (error instanceof ConfigError) {
    process.stderr.write(`${err.red("hearth: configuration error")}\n${error.message}\n`);
    process.exit(2);
  }
  process.stderr.write(`${err.red("hearth:")} ${(error as Error).message}\n`);
  process.exit(1);
}
