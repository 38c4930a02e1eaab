import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { BEGIN_MARKER, END_MARKER, renderSettingsTable, withSettingsTable } from "../../scripts/docs/settingsReference.js";
import { buildProgram } from "../../src/cli/program.js";
import { SERVER_SETTINGS } from "../../src/config/serverSettings.js";

const DOC = join(import.meta.dirname, "../../docs/configuration.md");

describe("docs/configuration.md's settings table", () => {
  it("is what npm run docs:generate writes from the code", () => {
    const committed = readFileSync(DOC, "utf8");
    expect(committed).toContain(BEGIN_MARKER);
    expect(withSettingsTable(committed)).toBe(committed);
  });

  it("has a row per setting, naming its flag, variable and default", () => {
    const table = renderSettingsTable();
    for (const setting of Object.values(SERVER_SETTINGS)) {
      expect(table).toContain(`| \`${setting.flag.split(" ")[0]}\` | \`${setting.env}\` |`);
    }
    expect(table).toContain("| `--keep-alive` | `HEARTH_KEEP_ALIVE` | `300` |");
    expect(table).toContain("| | `HEARTH_X402_EVM_SETTLER_KEY` | |");
  });

  it("lists flags that hearth serve accepts: every setting is one", () => {
    const serve = buildProgram().commands.find((command) => command.name() === "serve")!;
    const flags = serve.options.map((option) => option.long);
    for (const setting of Object.values(SERVER_SETTINGS)) expect(flags).toContain(setting.flag.split(" ")[0]);
  });

  it("replaces only the text between the markers", () => {
    const document = `# Title\n\nbefore\n${BEGIN_MARKER}\nstale table\n${END_MARKER}\nafter\n`;
    const updated = withSettingsTable(document);
    expect(updated.startsWith(`# Title\n\nbefore\n${BEGIN_MARKER}\n| flag |`)).toBe(true);
    expect(updated.endsWith(`|\n${END_MARKER}\nafter\n`)).toBe(true);
    expect(updated).not.toContain("stale table");
    expect(() => withSettingsTable("no markers")).toThrow(/markers are missing/);
  });
});
