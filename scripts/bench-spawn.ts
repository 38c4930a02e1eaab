/**
 * Process-start benchmark: how long starting one process holds the event loop, from this process
 * (a fork of it, as libuv starts children) and from the process spawner (src/media/processSpawner.ts,
 * how the node starts ffmpeg), with this process holding more and more resident memory. A 2 ms timer
 * measures the longest the loop stood still around each start; the started program is `true`.
 *
 *   node --import tsx scripts/bench-spawn.ts [--sizes 40,300,1024] [--runs 10]
 *
 * Each size runs in a fresh Node process (memory once touched stays resident). Writes
 * bench-out/spawn.json next to the table it prints.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { PACKAGE_ROOT } from "../src/config/packageRoot.js";
import { ProcessSpawner, type StartedProcess, spawnHere } from "../src/media/processSpawner.js";

const { values } = parseArgs({
  options: {
    sizes: { type: "string", default: "40,300,1024" },
    runs: { type: "string", default: "10" },
    /** Internal: measure in this process, holding this many MB. */
    "hold-mb": { type: "string" },
  },
});
const runs = Number(values.runs);

interface Row {
  residentMb: number;
  from: "this process" | "spawner";
  medianMs: number;
  maxMs: number;
}

if (values["hold-mb"] !== undefined) {
  process.stdout.write(`${JSON.stringify(await measureHere(Number(values["hold-mb"])))}\n`);
} else {
  const rows: Row[] = [];
  for (const size of values.sizes.split(",").map(Number)) {
    const child = spawnSync(process.execPath, ["--import", "tsx", new URL(import.meta.url).pathname, "--hold-mb", String(size), "--runs", String(runs)], { encoding: "utf8" });
    if (child.status !== 0) throw new Error(child.stderr);
    rows.push(...(JSON.parse(child.stdout) as Row[]));
  }
  console.log("resident MB | started from | loop held, median ms | max ms");
  for (const row of rows) console.log(`${String(row.residentMb).padStart(11)} | ${row.from.padEnd(12)} | ${String(row.medianMs).padStart(20)} | ${row.maxMs}`);
  const out = join(PACKAGE_ROOT, "bench-out");
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, "spawn.json"), `${JSON.stringify({ runs, rows }, null, 2)}\n`);
}

async function measureHere(holdMb: number): Promise<Row[]> {
  const ballast: Buffer[] = [];
  for (let i = 0; i < holdMb; i++) ballast.push(Buffer.alloc(1 << 20, 1)); // filled, so resident
  const spawner = await ProcessSpawner.start();
  let longest = 0;
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last - 2);
    last = now;
  }, 2);
  const residentMb = Math.round(process.memoryUsage().rss / 2 ** 20);
  const measure = async (from: Row["from"], start: () => Promise<StartedProcess>): Promise<Row> => {
    const held: number[] = [];
    for (let i = 0; i < runs; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      longest = 0;
      last = performance.now();
      await (await start()).exited;
      await new Promise((resolve) => setTimeout(resolve, 10));
      held.push(longest);
    }
    held.sort((a, b) => a - b);
    const round = (ms: number) => Math.round(ms * 10) / 10;
    return { residentMb, from, medianMs: round(held[Math.floor(held.length / 2)]!), maxMs: round(held.at(-1)!) };
  };
  const rows = [
    await measure("this process", () => spawnHere("true", [], ["ignore", "ignore", "ignore"])),
    await measure("spawner", () => spawner.spawn("true", [], ["ignore", "ignore", "ignore"])),
  ];
  clearInterval(timer);
  spawner.close();
  ballast.length = 0;
  return rows;
}
