import { spawn, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { PACKAGE_ROOT } from "../../src/config/packageRoot.js";
import { tinyChatPath } from "./testServer.js";

export const HEARTH_BIN = join(PACKAGE_ROOT, "bin", "hearth.cjs");

/**
 * Runs the real CLI (bin/hearth.cjs) to completion. Asynchronous on purpose: a spawnSync
 * would block the test worker's event loop for the whole run and starve vitest's RPC.
 */
export function hearth(args: string[], env: Record<string, string> = {}): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [HEARTH_BIN, ...args], { env: { ...process.env, ...env } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.once("error", reject);
    child.once("close", (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

/** Starts `hearth serve` and resolves with its base URL once it prints it (an undefined variable in `env` is left out of its environment). */
export function hearthServe(args: string[], env: Record<string, string | undefined> = {}): Promise<{ child: ChildProcess; baseUrl: string; output: () => string }> {
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

/** Writes, in `dir`, a registry holding only the tiny chat GGUF (one sequence of 512 tokens, one thread); returns its path. */
export function writeTinyChatRegistry(dir: string): string {
  const registry = join(dir, "models.config.json");
  writeFileSync(
    registry,
    JSON.stringify({ models: [{ id: "tiny-chat", type: "text", backend: "llama", file: tinyChatPath(), llama: { contextSize: 512, sequences: 1, threads: 1 } }] }),
  );
  return registry;
}

/** `hearth serve` on the tiny chat registry with its data in `dir`, logging at info (start-up lines included). */
export function serveTinyChat(dir: string, env: Record<string, string | undefined> = {}): ReturnType<typeof hearthServe> {
  return hearthServe(["--port", "0", "--data-dir", join(dir, "data"), "--config", writeTinyChatRegistry(dir)], { HEARTH_LOG_LEVEL: "info", ...env });
}
