/**
 * A demo node started as `hearth serve` in a child process for the fuzz and stress runs (its own
 * data directory, a metrics port, JSON logs), with keys written straight into its store, and the
 * stall reports it logs (--stall-warn-ms) collected as they come.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { createAccount } from "../src/store/accounts.js";
import { createApiKey } from "../src/store/apiKeys.js";
import { grantCredits, toMicros } from "../src/store/ledger.js";
import { databasePath, openStore } from "../src/store/Store.js";

const ROOT = resolve(import.meta.dirname, "..");

/** The node's stall reports (--stall-warn-ms): how long the loop was held, and what was in flight. */
export interface StallReport {
  heldMs: number;
  inFlight: { kind?: string; method?: string; route?: string; models?: string; runningMs?: number; clientRequestId?: string; [field: string]: unknown }[];
  moreInFlight?: number;
  inFlightCounts?: Record<string, number>;
  startedDuring?: number;
}

export interface NodeUnderTest {
  child: ChildProcess;
  baseUrl: string;
  metricsUrl: string;
  /** Every stall the node has logged so far. */
  stalls: StallReport[];
  /** The node's inspector (DevTools protocol) when started with `--inspect`. */
  inspectorUrl?: string;
}

export interface StartNodeOptions {
  /** Node's own flags, before the script (`--inspect=127.0.0.1:0`). */
  nodeArgs?: string[];
}

export async function startNode(dataDir: string, stallWarnMs = 100, options: StartNodeOptions = {}): Promise<NodeUnderTest> {
  const child = spawn(
    process.execPath,
    [
      ...(options.nodeArgs ?? []),
      join(ROOT, "bin/hearth.cjs"),
      "serve",
      "--port",
      "0",
      "--metrics-port",
      "0",
      "--data-dir",
      dataDir,
      "--log-level",
      "warn",
      "--log-format",
      "json",
      "--stall-warn-ms",
      String(stallWarnMs),
    ],
    { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] },
  );
  // Stall reports are kept for the report; errors and worse are shown; other warnings (callers
  // the abuse guard blocks, refused payments) are what a fuzz provokes.
  const stalls: StallReport[] = [];
  let inspectorUrl: string | undefined;
  createInterface({ input: child.stderr! }).on("line", (line) => {
    const inspector = /^Debugger listening on (ws:\S+)/.exec(line);
    if (inspector) inspectorUrl = inspector[1];
    if (inspector || /^(For help, see|Debugger attached|Debugger ending|Waiting for the debugger)/.test(line)) return;
    let entry: { level?: number; msg?: string } & Partial<StallReport>;
    try {
      entry = JSON.parse(line);
    } catch {
      process.stderr.write(`${line}\n`);
      return;
    }
    if (entry.msg?.startsWith("the event loop was held"))
      stalls.push({
        heldMs: entry.heldMs ?? 0,
        inFlight: entry.inFlight ?? [],
        moreInFlight: entry.moreInFlight,
        inFlightCounts: entry.inFlightCounts,
        startedDuring: entry.startedDuring,
      });
    else if ((entry.level ?? 0) >= 50) process.stderr.write(`${line}\n`);
  });
  let banner = "";
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => reject(new Error(`the node did not start in 180 s:\n${banner}`)), 180_000);
    child.once("exit", (code) => reject(new Error(`the node exited with ${code} before listening:\n${banner}`)));
    child.stdout!.on("data", (chunk: Buffer) => {
      banner += chunk.toString();
      const base = /listening on (\S+)/.exec(banner)?.[1];
      const metrics = /Metrics \(no auth\): (\S+)/.exec(banner)?.[1];
      if (base && metrics) {
        clearTimeout(timer);
        child.removeAllListeners("exit");
        resolvePromise({ child, baseUrl: base, metricsUrl: metrics, stalls, inspectorUrl });
      }
    });
  });
}

/**
 * Keys straight into the node's SQLite file (WAL: the running node sees them at once). Many of
 * them: the abuse guard blocks a key after 20 failures in 30 s, and a fuzz is mostly failures.
 */
export function createKeys(dataDir: string, count: number, admin: boolean, usd = 5): string[] {
  const db = openStore(databasePath(dataDir));
  try {
    return Array.from({ length: count }, (_, i) => {
      const account = createAccount(db, `fuzz ${admin ? "admin" : "inference"} ${i}`);
      grantCredits(db, account.id, "USD", toMicros(usd), "fuzz grant");
      return createApiKey(db, { accountId: account.id, description: "fuzz", keyType: admin ? "ADMIN" : "INFERENCE" }).secret;
    });
  } finally {
    db.close();
  }
}

/**
 * What an innocent client waits meanwhile: a `GET /models` every `everyMs` until stopped; `stop`
 * resolves with each probe's latency in milliseconds.
 */
export function probeListing(baseUrl: string, everyMs: number): { stop(): Promise<number[]> } {
  const latencies: number[] = [];
  let probing = true;
  const loop = (async () => {
    while (probing) {
      const sent = performance.now();
      await fetch(`${baseUrl}/models`)
        .then((r) => r.arrayBuffer())
        .catch(() => undefined);
      latencies.push(performance.now() - sent);
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return {
    stop: async () => {
      probing = false;
      await loop;
      return latencies;
    },
  };
}
