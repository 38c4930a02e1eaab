import type { Command } from "commander";
import { resolve } from "node:path";

export function registerFixturesCommand(program: Command): void {
  program
    .command("fixtures")
    .description("write the tiny random-weight demo models (real file layouts, gibberish output) into a directory")
    .requiredOption("--out <dir>", "directory to write the models into (created if missing)")
    .action(async (flags: { out: string }) => {
      const { writeAllDemoFixtures } = await import("../fixtures/demoModels.js");
      for (const path of await writeAllDemoFixtures(resolve(flags.out))) process.stdout.write(`${path}\n`);
    });
}
