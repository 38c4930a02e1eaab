import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { writeAllDemoFixtures } from "../../src/fixtures/demoModels.js";

declare module "vitest" {
  export interface ProvidedContext {
    fixturesDir: string;
  }
}

/** Generates the tiny models once per run; every test file reads them from here. */
export default async function setup(project: TestProject) {
  const dir = mkdtempSync(join(tmpdir(), "hearth-fixtures-"));
  await writeAllDemoFixtures(dir);
  project.provide("fixturesDir", dir);
  return () => rmSync(dir, { recursive: true, force: true });
}
