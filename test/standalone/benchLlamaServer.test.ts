import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { describeLlamaServer, deviceMismatch } from "../../scripts/bench/llamaServerBuild.js";
import { parseLlamaServerDecodeCounters } from "../../scripts/bench/servers.js";

// `npm run bench -- --vs-llama-server --llama-server <path>` compares against a llama-server the user
// built. What it is comes from the binary's own answers; these stand-ins answer as llama-server does
// (its log lines and version on stderr, the device list on stdout).
const dir = mkdtempSync(join(tmpdir(), "hearth-llama-server-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function standIn(name: string, version: string, devices: string): string {
  const path = join(dir, name);
  writeFileSync(
    path,
    [
      "#!/bin/sh",
      'echo "0.00.000.414 I srv  llama_server: initializing ..." >&2',
      `if [ "$1" = "--version" ]; then printf '%b\\n' ${JSON.stringify(version)} >&2; exit 0; fi`,
      `if [ "$1" = "--list-devices" ]; then printf '%b\\n' ${JSON.stringify(devices)}; exit 0; fi`,
      "exit 1",
      "",
    ].join("\n"),
  );
  chmodSync(path, 0o755);
  return path;
}

describe("bench: a llama-server given with --llama-server", () => {
  it("reads the release and commit from --version and finds a CUDA device in --list-devices", () => {
    const server = standIn(
      "cuda-server",
      "version: 0.5.0-dev (build 1, commit de3ff81)\nbuilt with GNU 13.3.0 for Linux x86_64",
      "Available devices:\n  CUDA0: NVIDIA H100 80GB HBM3 (81079 MiB, 80552 MiB free)",
    );
    expect(describeLlamaServer(server)).toEqual({
      commit: "de3ff81",
      release: "0.5.0-dev",
      gpu: "cuda",
      directory: dir,
      server,
      batchedBench: join(dir, "llama-batched-bench"),
    });
  });

  it("calls a build with no device listed a CPU build", () => {
    const server = standIn("cpu-server", "version: 7001 (b52edd25)\nbuilt with GNU 12.2.0 for Linux x86_64", "Available devices:\n  (none)");
    expect(describeLlamaServer(server)).toMatchObject({ commit: "b52edd25", release: "7001", gpu: "cpu" });
  });

  it("names a Vulkan or Metal build by its device, so the device check compares like with like", () => {
    const vulkan = standIn("vulkan-server", "version: 7001 (b52edd25)", "Available devices:\n  Vulkan0: AMD Radeon RX 7900 XTX (24560 MiB, 24000 MiB free)");
    expect(describeLlamaServer(vulkan).gpu).toBe("vulkan");
    const metal = standIn("metal-server", "version: 7001 (b52edd25)", "Available devices:\n  MTL0: Apple M2 Max (49152 MiB, 49151 MiB free)");
    expect(describeLlamaServer(metal).gpu).toBe("metal");
    expect(deviceMismatch("llama.cpp/vulkan", describeLlamaServer(vulkan).gpu)).toBeUndefined();
  });

  it("refuses a binary that does not say what it is, and a path that does not exist", () => {
    const other = standIn("not-llama", "some other program 1.0", "");
    expect(() => describeLlamaServer(other)).toThrow(/did not name a version and commit/);
    expect(() => describeLlamaServer(join(dir, "missing"))).toThrow(/no such file/);
  });
});

describe("bench: both servers on the same device", () => {
  it("is quiet when Hearth's engine runs where llama-server's build does", () => {
    expect(deviceMismatch("llama.cpp/cuda", "cuda")).toBeUndefined();
    expect(deviceMismatch("llama.cpp/cpu", "cpu")).toBeUndefined();
  });

  it("warns when node-llama-cpp fell back to another device than llama-server's", () => {
    expect(deviceMismatch("llama.cpp/cpu", "cuda")).toBe("the two servers run on different devices (Hearth: cpu, llama-server: cuda): the ratios compare devices, not servers");
    expect(deviceMismatch("llama.cpp/vulkan", "cuda")).toMatch(/Hearth: vulkan, llama-server: cuda/);
  });

  it("warns when Hearth's answer does not name its device", () => {
    expect(deviceMismatch(null, "cpu")).toMatch(/did not name its llama.cpp device \(x-service-model-router: missing\)/);
    expect(deviceMismatch("upstream 10.0.0.2", "cpu")).toMatch(/x-service-model-router: upstream 10.0.0.2/);
  });
});

describe("llama-server's decode counters (GET /metrics with --metrics)", () => {
  // The lines as llama-server writes them (tools/server/server-task.cpp): counters, then gauges.
  const metrics = [
    "# HELP llamacpp:tokens_predicted_total Number of generation tokens processed",
    "# TYPE llamacpp:tokens_predicted_total counter",
    "llamacpp:tokens_predicted_total 2048",
    "# HELP llamacpp:n_decode_total Total number of llama_decode() calls, excluding speculative decoding and multimodal decoding",
    "# TYPE llamacpp:n_decode_total counter",
    "llamacpp:n_decode_total 640",
    "# HELP llamacpp:n_busy_slots_per_decode Average number of busy slots per llama_decode() call",
    "# TYPE llamacpp:n_busy_slots_per_decode gauge",
    "llamacpp:n_busy_slots_per_decode 3.2",
    "",
  ].join("\n");

  it("reads the calls and the sequences summed over them (the average times the calls)", () => {
    expect(parseLlamaServerDecodeCounters(metrics)).toEqual({ decodeCalls: 640, sequenceSlots: 2048 });
  });

  it("gives null when a figure is missing (an older llama-server, or one started without --metrics)", () => {
    expect(parseLlamaServerDecodeCounters(metrics.replace(/^llamacpp:n_decode_total.*$/m, ""))).toBeNull();
    expect(parseLlamaServerDecodeCounters("")).toBeNull();
  });
});
