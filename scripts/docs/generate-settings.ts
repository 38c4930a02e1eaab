/**
 * Writes the settings table of docs/configuration.md from the code (src/config/serverSettings.ts
 * and the wallet secrets), between its markers. `--check` writes nothing and exits 1 when the
 * committed table differs (test/standalone/settingsDocs.test.ts checks the same).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PACKAGE_ROOT } from "../../src/config/packageRoot.js";
import { withSettingsTable } from "./settingsReference.js";

const path = join(PACKAGE_ROOT, "docs", "configuration.md");
const current = readFileSync(path, "utf8");
const generated = withSettingsTable(current);
if (process.argv.includes("--check")) {
  if (generated !== current) {
    process.stderr.write(`${path} is out of date: run npm run docs:generate\n`);
    process.exit(1);
  }
} else if (generated !== current) {
  writeFileSync(path, generated);
  process.stdout.write(`wrote the settings table of ${path}\n`);
}
