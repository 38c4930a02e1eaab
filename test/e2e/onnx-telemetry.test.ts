import { existsSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { exited, hearthServe } from "../helpers/cli.js";
import { fixturesDir } from "../helpers/testServer.js";
import { testTempDir } from "../helpers/tempDir.js";

/**
 * onnxruntime's official Linux builds collect telemetry unless ORT_DISABLE_TELEMETRY is set when
 * it initializes: a device id and an event cache under the home directory, an upload to
 * Microsoft's collector, a debug log in /tmp. A Hearth node sends nothing. The server runs with
 * the variable removed from its environment (the test runner sets it for its own processes) and
 * a home directory of its own, loads an ONNX model, and must leave no trace of the telemetry.
 */
describe("onnxruntime's telemetry", () => {
  it("stays off in hearth serve: no device id or event cache in the home directory, no debug log", async () => {
    const home = testTempDir("hearth-home-");
    const dataDir = testTempDir("hearth-telemetry-");
    const registry = join(dataDir, "models.config.json");
    // A diffusion model: its worker opens onnxruntime sessions without transformers.js, which
    // would set the variable itself as it loads (speech, transcription and the other ONNX engines
    // import it), so only Hearth's own setting keeps this node quiet.
    const diffusion = { id: "tiny-sd", type: "image", backend: "onnx-diffusion", file: join(fixturesDir(), "tiny-sd") };
    writeFileSync(registry, JSON.stringify({ models: [diffusion] }));
    // Other processes on this machine may have left debug logs, named by a pid the server can be
    // given again: what counts is a log this server wrote, absent before or changed since.
    const logDirs = [...new Set(["/tmp", tmpdir()])];
    const logsBefore = new Map(logDirs.flatMap((dir) => debugLogs(dir)));
    const { child, output } = await hearthServe(["--port", "0", "--data-dir", dataDir, "--config", registry, "--preload", "tiny-sd"], {
      HOME: home,
      ORT_DISABLE_TELEMETRY: undefined,
    });
    try {
      // The load opens the pipeline's sessions in its worker, which initializes onnxruntime.
      await expect.poll(output, { timeout: 30_000 }).toMatch(/Loaded tiny-sd/);
      // Give an uploader started at initialization a moment to write what it writes.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(existsSync(join(home, ".cache", "Microsoft"))).toBe(false);
      for (const dir of logDirs) {
        const log = join(dir, `mat-debug-${child.pid}.log`);
        const written = existsSync(log) && statSync(log).mtimeMs !== logsBefore.get(log);
        expect(written, `${log} written by the server`).toBe(false);
      }
    } finally {
      child.kill("SIGTERM");
      expect(await exited(child)).toBe(0);
    }
  });
});

/** onnxruntime's telemetry debug logs in a directory, with their modification times. */
function debugLogs(dir: string): [string, number][] {
  return readdirSync(dir)
    .filter((name) => /^mat-debug-\d+\.log$/.test(name))
    .map((name) => [join(dir, name), statSync(join(dir, name)).mtimeMs]);
}
