import { existsSync, mkdirSync, readdirSync, statSync } from "node:fs";
import nodeModule from "node:module";
import { join } from "node:path";
import { expect, it, vi } from "vitest";
import { exited, serveTinyChat } from "../helpers/cli.js";
import { testTempDir } from "../helpers/tempDir.js";

/** Node's compile cache (22.1+), and writing it before exit (22.10+). */
const { enableCompileCache, flushCompileCache } = nodeModule as { enableCompileCache?: unknown; flushCompileCache?: unknown };

/** The files under a directory, at any depth (none if it does not exist). */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  // Relative paths rather than Dirent.parentPath, which Node 20 has only from 20.12 (the package asks for 20.9).
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .map((name) => join(dir, name))
    .filter((path) => statSync(path).isFile());
}

/**
 * `hearth serve` keeps the code Node compiles for its start in Node's compile cache where Node has
 * one, in the system's temporary directory (TMPDIR here), and writes it once it listens: a server is
 * seldom stopped cleanly, and a killed one writes nothing at exit.
 */
it("a started hearth serve has written the code its start compiled to Node's compile cache, where Node has one", async () => {
  const dir = testTempDir("hearth-compile-cache-");
  const temporary = join(dir, "tmp");
  const cache = join(temporary, "node-compile-cache");
  mkdirSync(temporary);
  const { child, baseUrl } = await serveTinyChat(dir, { TMPDIR: temporary, NODE_COMPILE_CACHE: undefined, NODE_DISABLE_COMPILE_CACHE: undefined });
  try {
    expect((await fetch(`${baseUrl}/models`)).status).toBe(200);
    if (typeof flushCompileCache === "function") {
      // Written while it runs: the start reads a few hundred modules.
      await vi.waitFor(() => expect(filesUnder(cache).length).toBeGreaterThan(20), { timeout: 10_000 });
    }
  } finally {
    child.kill(typeof flushCompileCache === "function" ? "SIGKILL" : "SIGTERM");
    await exited(child);
  }
  if (typeof enableCompileCache === "function") expect(filesUnder(cache).length).toBeGreaterThan(20);
  else expect(existsSync(cache)).toBe(false);
}, 60_000);
