import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it, vi } from "vitest";
import { exited, serveTinyChat } from "../helpers/cli.js";

const dir = mkdtempSync(join(tmpdir(), "hearth-malloc-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** `process.execve` (Node 22.15 and later) on glibc: where `hearth serve` can start again with its allocator settings. */
const canStartAgain =
  typeof (process as { execve?: unknown }).execve === "function" &&
  (process.report.getReport() as { header: { glibcVersionRuntime?: string } }).header.glibcVersionRuntime !== undefined;

/** Starts `hearth serve` (bin/hearth.cjs) and reads the environment its process runs with from /proc, once it answers. */
async function serveAndReadEnvironment(env: Record<string, string | undefined>): Promise<{ environment: Map<string, string>; output: string }> {
  const { child, baseUrl, output } = await serveTinyChat(dir, env);
  try {
    expect((await fetch(`${baseUrl}/models`)).status).toBe(200);
    // The start-up log may come after the line that says it listens (another pipe, another write).
    await vi.waitFor(() => expect(output()).toContain("memory allocator:"), { timeout: 10_000 });
    // The process started (child.pid) is the one serving: a new start replaces it under the same id.
    const entries = readFileSync(`/proc/${child.pid}/environ`, "utf8").split("\0").filter(Boolean);
    return { environment: new Map(entries.map((entry) => [entry.slice(0, entry.indexOf("=")), entry.slice(entry.indexOf("=") + 1)])), output: output() };
  } finally {
    child.kill("SIGTERM");
    await exited(child);
  }
}

const unset = { MALLOC_ARENA_MAX: undefined, MALLOC_MMAP_THRESHOLD_: undefined, GLIBC_TUNABLES: undefined, HEARTH_MALLOC_SETTINGS: undefined };

it.skipIf(process.platform !== "linux")(
  "hearth serve runs with glibc's mmap threshold fixed at 128 KiB where the process can start again (Node 22.15+ on glibc), else with the C library's defaults; the operator's variables win",
  async () => {
    const chosen = await serveAndReadEnvironment(unset);
    if (canStartAgain) {
      expect(chosen.environment.get("MALLOC_MMAP_THRESHOLD_")).toBe("131072");
      expect(chosen.environment.has("MALLOC_ARENA_MAX")).toBe(false);
      expect(chosen.output).toContain("memory allocator: MALLOC_MMAP_THRESHOLD_=131072 (hearth: ");
    } else {
      expect(chosen.environment.has("MALLOC_ARENA_MAX")).toBe(false);
      expect(chosen.environment.has("MALLOC_MMAP_THRESHOLD_")).toBe(false);
      expect(chosen.output).toContain("memory allocator: defaults (the C library)");
    }
    // One start either way: the log's first line is not written twice.
    expect(chosen.output.match(/memory allocator:/g)).toHaveLength(1);

    const operators = await serveAndReadEnvironment({ ...unset, MALLOC_ARENA_MAX: "4" });
    expect(operators.environment.get("MALLOC_ARENA_MAX")).toBe("4");
    expect(operators.environment.has("MALLOC_MMAP_THRESHOLD_")).toBe(false);
    expect(operators.output).toContain("memory allocator: MALLOC_ARENA_MAX=4 (the environment)");
  },
  60_000,
);
