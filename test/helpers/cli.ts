import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { PACKAGE_ROOT } from "../../src/config.js";

export const HEARTH_BIN = join(PACKAGE_ROOT, "bin", "hearth.js");

/** Runs the real CLI (bin/hearth.js) to completion. */
export function hearth(args: string[], env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, [HEARTH_BIN, ...args], { encoding: "utf8", env: { ...process.env, ...env }, timeout: 60_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** Starts `hearth serve` and resolves with its base URL once it prints it. */
export function hearthServe(args: string[], env: Record<string, string> = {}): Promise<{ child: ChildProcess; baseUrl: string; output: () => string }> {
  const child = spawn(process.execPath, [HEARTH_BIN, "serve", ...args], { env: { ...process.env, HEARTH_LOG_LEVEL: "warn", ...env } });
  let output = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`hearth serve did not start:\n${output}`)), 60_000);
    const onData = (data: Buffer) => {
      output += data.toString();
      const match = /listening on (\S+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve({ child, baseUrl: match[1]!, output: () => output });
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`hearth serve exited with ${code}:\n${output}`));
    });
  });
}

export const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : child.once("exit", (code) => resolve(code))));
