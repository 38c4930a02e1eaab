import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isPrettyAvailable } from "../../src/logger.js";
import { exited, HEARTH_BIN } from "../helpers/cli.js";
import { tinyChatPath } from "../helpers/testServer.js";
import { testTempDir } from "../helpers/tempDir.js";

/**
 * Runs `hearth serve --preload tiny-chat` with the given --log-format (stdout and stderr are pipes,
 * so "auto" would mean JSON), waits for the "model loaded" log line, stops it with SIGTERM and
 * returns what it wrote to stderr, where the logs go.
 */
async function serveLogs(logFormat: string): Promise<{ stderr: string; stdout: string; code: number | null }> {
  const dataDir = testTempDir("hearth-log-format-");
  const registry = join(dataDir, "models.config.json");
  writeFileSync(
    registry,
    JSON.stringify({ models: [{ id: "tiny-chat", type: "text", backend: "llama", file: tinyChatPath(), llama: { contextSize: 1024, sequences: 1, threads: 1 } }] }),
  );
  const args = [HEARTH_BIN, "serve", "--port", "0", "--data-dir", dataDir, "--config", registry, "--preload", "tiny-chat", "--log-format", logFormat];
  const child = spawn(process.execPath, args, { env: { ...process.env, HEARTH_LOG_LEVEL: "info" } });
  let stderr = "";
  let stdout = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "model loaded" log line:\n${stderr}`)), 60_000);
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
      if (stderr.includes("model loaded")) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once("exit", (code) => reject(new Error(`hearth serve exited with ${code}:\n${stderr}`)));
  });
  child.kill("SIGTERM");
  const code = await exited(child);
  return { stderr, stdout, code };
}

const lines = (text: string) => text.split("\n").filter((line) => line.trim() !== "");

describe("hearth serve --log-format", () => {
  it("json writes one JSON object per stderr line, the banner stays on stdout", async () => {
    const { stderr, stdout, code } = await serveLogs("json");
    expect(code).toBe(0);
    const records = lines(stderr).map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records.map((r) => r.msg)).toEqual(expect.arrayContaining(["model loaded", "shutting down"]));
    expect(records.find((r) => r.msg === "model loaded")).toMatchObject({ level: 30, service: "hearth", models: ["tiny-chat"] });
    expect(stdout).toMatch(/^Hearth is listening on http:\/\/127\.0\.0\.1:\d+\/api\/v1$/m);
  });

  it("pretty writes pino-pretty's human lines (JSON lines and a notice when pino-pretty is not installed)", async () => {
    const { stderr, code } = await serveLogs("pretty");
    expect(code).toBe(0);
    if (isPrettyAvailable()) {
      // "[HH:MM:ss.mmm] INFO: model loaded", then its fields indented; the shutdown line is flushed before exit.
      expect(stderr).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: model loaded$/m);
      expect(stderr).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: shutting down$/m);
      expect(stderr).toMatch(/^ {4}reason: "loaded"$/m);
      expect(stderr).not.toMatch(/^\{"level"/m);
    } else {
      const [notice, ...rest] = lines(stderr);
      expect(notice).toBe("hearth: pino-pretty is not installed (npm install); logging JSON lines");
      expect(rest.map((line) => (JSON.parse(line) as { msg: string }).msg)).toContain("model loaded");
    }
  });

  it("rejects a format it does not know", async () => {
    const child = spawn(process.execPath, [HEARTH_BIN, "serve", "--log-format", "xml"]);
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    expect(await exited(child)).not.toBe(0);
    expect(stderr).toContain('settings: logFormat: Invalid option: expected one of "auto"|"json"|"pretty"');
  });
});
