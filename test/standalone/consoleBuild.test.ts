import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { build } from "vite";
import { afterAll, describe, expect, it } from "vitest";
import { PACKAGE_ROOT } from "../../src/config/packageRoot.js";

/**
 * The console ships prebuilt (src/console/dist is committed, so `npm start` needs no build).
 * This rebuilds the sources and compares: a source change committed without `npm run
 * build:console` fails here instead of shipping a stale console.
 */
const webRoot = join(PACKAGE_ROOT, "src", "console", "web");
const committed = join(PACKAGE_ROOT, "src", "console", "dist");
const scratch = mkdtempSync(join(tmpdir(), "hearth-console-build-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function files(dir: string): Map<string, string> {
  const found = new Map<string, string>();
  const walk = (at: string) => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      const path = join(at, entry.name);
      if (entry.isDirectory()) walk(path);
      else found.set(relative(dir, path), readFileSync(path, "utf8"));
    }
  };
  walk(dir);
  return found;
}

describe("the committed console build", () => {
  it("is what the sources build to (run `npm run build:console` after changing them)", async () => {
    // As `npm run build:console` builds it: vitest sets NODE_ENV=test, which changes the bundle.
    const nodeEnv = process.env.NODE_ENV;
    process.env.NODE_ENV = "production";
    await build({ mode: "production", root: webRoot, configFile: join(webRoot, "vite.config.ts"), logLevel: "silent", build: { outDir: scratch, emptyOutDir: true } }).finally(
      () => {
        process.env.NODE_ENV = nodeEnv;
      },
    );
    const fresh = files(scratch);
    const shipped = files(committed);
    expect([...shipped.keys()].sort()).toEqual([...fresh.keys()].sort());
    for (const [name, content] of fresh) expect(shipped.get(name), name).toBe(content);
  });
});
