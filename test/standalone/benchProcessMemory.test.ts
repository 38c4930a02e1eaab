import { spawn } from "node:child_process";
import { once } from "node:events";
import { describe, expect, it } from "vitest";
import { parseProcStatusMemory, processMemory } from "../../scripts/bench/servers.js";

// The bench reports each server's resident memory split into anonymous and file-backed pages, read
// from /proc/<pid>/status, so that a difference between Hearth and llama-server says what kind of
// memory it is (heaps and buffers, or binaries and the memory-mapped weights).
describe.runIf(process.platform === "linux")("bench: a server's resident memory and its split", () => {
  it("reads VmRSS, RssAnon and RssFile of a live process, and the parts add up to the whole", () => {
    const memory = processMemory(process.pid)!;
    expect(memory.rssBytes).toBeGreaterThan(10 * 2 ** 20);
    expect(memory.anonBytes).toBeGreaterThan(0);
    expect(memory.fileBytes).toBeGreaterThan(0);
    // VmRSS = RssAnon + RssFile + RssShmem; the shared-memory part is small here and never negative.
    expect(memory.anonBytes + memory.fileBytes).toBeLessThanOrEqual(memory.rssBytes);
    expect(memory.anonBytes + memory.fileBytes).toBeGreaterThan(memory.rssBytes * 0.9);
  });

  it("sees a child's anonymous memory grow when it fills a heap buffer, and its file pages stay put", async () => {
    const child = spawn(
      process.execPath,
      ["-e", "process.stdin.once('data', () => { globalThis.b = Buffer.alloc(64 * 2 ** 20, 1); console.log('filled'); }); console.log('ready'); setInterval(() => {}, 1000);"],
      {
        stdio: ["pipe", "pipe", "inherit"],
      },
    );
    try {
      const lines = child.stdout!.setEncoding("utf8");
      await once(lines, "data");
      const before = processMemory(child.pid)!;
      child.stdin!.write("go\n");
      await once(lines, "data");
      const after = processMemory(child.pid)!;
      expect(after.anonBytes - before.anonBytes).toBeGreaterThan(60 * 2 ** 20);
      expect(Math.abs(after.fileBytes - before.fileBytes)).toBeLessThan(16 * 2 ** 20);
    } finally {
      child.kill();
    }
  });

  it("is null for a process that is gone and for a status text without VmRSS", () => {
    expect(processMemory(2 ** 22 + 12345)).toBeNull();
    expect(processMemory(undefined)).toBeNull();
    expect(parseProcStatusMemory("Name:\tnode\nState:\tZ (zombie)\n")).toBeNull();
    expect(parseProcStatusMemory("VmRSS:\t  2048 kB\nRssAnon:\t  1024 kB\nRssFile:\t   512 kB\n")).toEqual({
      rssBytes: 2048 * 1024,
      anonBytes: 1024 * 1024,
      fileBytes: 512 * 1024,
    });
  });
});
