import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { chooseLibuvPool, linuxGpuDevices } from "../../bin/libuvPool.cjs";
import { exited, hearth, serveTinyChat } from "../helpers/cli.js";

const dir = mkdtempSync(join(tmpdir(), "hearth-libuv-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Starts `hearth serve` (the real entry point, bin/hearth.cjs), and counts its threads once it answers. */
async function serveAndCountThreads(env: Record<string, string | undefined>): Promise<{ threads: number; output: string }> {
  const { child, baseUrl, output } = await serveTinyChat(dir, env);
  try {
    expect((await fetch(`${baseUrl}/models`)).status).toBe(200);
    return { threads: readdirSync(`/proc/${child.pid}/task`).length, output: output() };
  } finally {
    child.kill("SIGTERM");
    await exited(child);
  }
}

// libuv starts all of its pool's threads at once, so a pool's size shows in the process's thread count.
it.skipIf(process.platform !== "linux")(
  "hearth serve sizes libuv's pool before the pool starts: one thread on a machine without a GPU device, else libuv's 4; UV_THREADPOOL_SIZE wins",
  async () => {
    // A start that brings dist/ up to date keeps esbuild's thread: let a first run do that.
    expect((await hearth(["--version"])).status).toBe(0);
    const expected = chooseLibuvPool({ argv: ["serve"], env: {}, platform: "linux", gpuDevices: () => linuxGpuDevices() })?.size ?? 4;
    const chosen = await serveAndCountThreads({ UV_THREADPOOL_SIZE: undefined });
    const four = await serveAndCountThreads({ UV_THREADPOOL_SIZE: "4" });
    const two = await serveAndCountThreads({ UV_THREADPOOL_SIZE: "2" });
    expect(four.threads - two.threads).toBe(2);
    expect(four.threads - chosen.threads).toBe(4 - expected);
    expect(chosen.output).toContain(`libuv thread pool: ${expected} (${expected === 1 ? "hearth: no GPU device" : "libuv's default"}`);
    expect(four.output).toContain("libuv thread pool: 4 (UV_THREADPOOL_SIZE)");
  },
  60_000,
);
