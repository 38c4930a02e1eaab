import { ConfigError } from "../config/ConfigError.js";
import { buildProgram } from "./program.js";
import { err } from "./ui.js";

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
