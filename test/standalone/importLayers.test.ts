import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const SRC = join(import.meta.dirname, "../../src");

/** Every relative import target of every .ts file under a directory, as src-relative paths. */
function importsUnder(dir: string): { file: string; target: string }[] {
  const found: { file: string; target: string }[] = [];
  for (const item of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!item.isFile() || !/\.(ts|tsx|mts)$/.test(item.name)) continue;
    const path = join(item.parentPath, item.name);
    for (const match of readFileSync(path, "utf8").matchAll(/(?:from|import)\s*\(?\s*"(\.[^"]+)"/g)) {
      found.push({ file: relative(SRC, path), target: relative(SRC, join(item.parentPath, match[1]!)) });
    }
  }
  return found;
}

describe("import layers", () => {
  it("engines never import the demo-model generators (fixtures may import engines, never the reverse)", () => {
    const offending = importsUnder(join(SRC, "engines")).filter(({ target }) => target.startsWith("fixtures/"));
    expect(offending).toEqual([]);
  });

  it("outside src/fixtures/, only its one entry point (demoModels) is imported", () => {
    const outside = readdirSync(SRC, { withFileTypes: true })
      .filter((item) => item.isDirectory() && item.name !== "fixtures")
      .flatMap((item) => importsUnder(join(SRC, item.name)));
    const rootFiles = readdirSync(SRC).filter((name) => name.endsWith(".ts"));
    const fromRoot = rootFiles.flatMap((name) =>
      [...readFileSync(join(SRC, name), "utf8").matchAll(/(?:from|import)\s*\(?\s*"(\.[^"]+)"/g)].map((m) => ({ file: name, target: relative(SRC, join(SRC, m[1]!)) })),
    );
    const targets = new Set([...outside, ...fromRoot].filter(({ target }) => target.startsWith("fixtures/")).map(({ target }) => target));
    expect([...targets]).toEqual(["fixtures/demoModels.js"]);
  });
});
