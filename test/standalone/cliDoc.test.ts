import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { CLI_DOC_PATH, renderCliDoc } from "../../scripts/docs/generate-cli.js";

describe("docs/cli.md", () => {
  it("is what the commander program prints (run npm run docs:cli after changing a command)", () => {
    expect(readFileSync(CLI_DOC_PATH, "utf8")).toBe(renderCliDoc());
  });

  it("holds every command's help, the lines added after the options included", () => {
    const doc = renderCliDoc();
    expect(doc).toContain("## hearth serve\n\n```text\nUsage: hearth serve [options]");
    expect(doc).toContain("## hearth keys create\n");
    expect(doc).toMatch(/--log-format <format>\s+log lines on stderr/);
    expect(doc).toContain("Secrets come from the environment only:");
  });
});
