"use strict";
// CommonJS on purpose: it runs before anything starts libuv's thread pool (see hearth.cjs).
const { readdirSync } = require("node:fs");

/**
 * The size of libuv's thread pool for a `hearth serve` process, chosen before the pool starts:
 * libuv reads UV_THREADPOOL_SIZE once, when the pool starts, and loading an ES module starts it.
 *
 * node-llama-cpp runs every llama.cpp decode and every sampling as a job on that pool, and with
 * its prebuilt CPU binaries each decode starts its other compute threads afresh. With libuv's
 * default of 4, consecutive decodes start from different, mostly idle pool threads; Linux then
 * often places a decode's new compute thread on the same core as the pool thread that started it,
 * and llama.cpp's spin barriers wait for it until the kernel moves one of them (a scheduler
 * trace in docs/bench.md). One stream decoded at 0.60x llama-server's speed with the pool of 4 on
 * the 2-core machine, and at 0.98-1.00x with a pool of one thread. On a GPU the decode is the GPU's
 * work and the pool's other jobs (loading a second model, file reads, compression) should not
 * wait behind it, so the pool is only shrunk where llama.cpp can only run on the CPU.
 *
 * @param {{
 *   argv: readonly string[];
 *   env: Record<string, string | undefined>;
 *   platform: string;
 *   gpuDevices: () => string[];
 * }} host the CLI's arguments (without node and the script), the environment, the platform and
 *   the GPU device files present
 * @returns {{ size: number; reason: string } | undefined} the size to set, or undefined to leave
 *   libuv's choice (UV_THREADPOOL_SIZE as given, else 4)
 */
function chooseLibuvPool({ argv, env, platform, gpuDevices }) {
  if (argv[0] !== "serve") return undefined;
  // The operator's, whatever it says (libuv reads an empty or non-numeric value as 1).
  if (env.UV_THREADPOOL_SIZE !== undefined) return undefined;
  // Only Linux lists its GPUs as device files; elsewhere (Metal on macOS, CUDA or Vulkan on
  // Windows) the pool stays libuv's and an operator sets UV_THREADPOOL_SIZE=1 for a CPU-only node.
  if (platform !== "linux") return undefined;
  if (gpuDevices().length > 0) return undefined;
  return { size: 1, reason: "no GPU device on this machine: llama.cpp decodes on the CPU, each from the same thread" };
}

/**
 * GPU device files node-llama-cpp's backends use on Linux: NVIDIA's (CUDA), DRM render nodes
 * (Vulkan, on any vendor's GPU) and AMD's compute device.
 *
 * @param {(path: string) => string[]} [list] a directory's entries, [] when it does not exist
 *   (default: the file system's)
 * @returns {string[]}
 */
function linuxGpuDevices(list = entriesOf) {
  const devices = list("/dev")
    .filter((name) => /^nvidia(ctl|\d+)$/.test(name) || name === "kfd")
    .map((name) => `/dev/${name}`);
  const renderNodes = list("/dev/dri")
    .filter((name) => name.startsWith("renderD"))
    .map((name) => `/dev/dri/${name}`);
  return [...devices, ...renderNodes];
}

/**
 * Sets the pool's size for a process about to run the CLI with `argv`, before the pool starts:
 * UV_THREADPOOL_SIZE, and why in HEARTH_LIBUV_POOL_REASON for the start-up log (the variable
 * alone means the operator set it). The entries of the CLI and of the bench call it first.
 *
 * @param {readonly string[]} argv the CLI's arguments (without node and the script)
 */
function sizeLibuvPool(argv) {
  const choice = chooseLibuvPool({ argv, env: process.env, platform: process.platform, gpuDevices: () => linuxGpuDevices() });
  if (choice) {
    process.env.UV_THREADPOOL_SIZE = String(choice.size);
    process.env.HEARTH_LIBUV_POOL_REASON = choice.reason;
  } else {
    delete process.env.HEARTH_LIBUV_POOL_REASON;
  }
}

/** @param {string} path */
function entriesOf(path) {
  try {
    return readdirSync(path);
  } catch {
    return [];
  }
}

module.exports = { chooseLibuvPool, linuxGpuDevices, sizeLibuvPool };
