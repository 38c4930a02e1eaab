import type { Command } from "commander";
import { resolve } from "node:path";
import { progressBar } from "./ui.js";

export function registerFixturesCommand(program: Command): void {
  program
    .command("fixtures")
    .description("write the tiny random-weight demo models (real file layouts, gibberish output) into a directory")
    .requiredOption("--out <dir>", "directory to write the models into (created if missing)")
    .action(async (flags: { out: string }) => {
      const { writeAllDemoFixtures } = await import("../fixtures/demoModels.js");
      const progress = progressBar("Writing demo models");
      const paths = await writeAllDemoFixtures(resolve(flags.out), (done, total, path) => progress.update(done, total, path)).finally(() => progress.stop());
      for (const path of paths) process.stdout.write(`${path}\n`);
    });
}
