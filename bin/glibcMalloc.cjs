"use strict";
// CommonJS on purpose: it runs first, before the CLI has started anything (see hearth.cjs).

/**
 * glibc's allocator setting a `hearth serve` process runs with, unless the operator chose their own.
 *
 * glibc keeps a block it frees for the next allocation unless the block is above its mmap
 * threshold, and each time it returns such a block it raises that threshold to the block's size
 * (up to 32 MiB). A node's threads free large blocks all the time (tensors in onnxruntime's and the
 * engines' threads, pictures in sharp's, llama.cpp's loads on libuv's pool), so the threshold soon
 * stands high and those blocks stay in the threads' arenas, scattered. In `npm run soak` (every
 * engine, 200 rounds) resident memory crept up about 21 MB while the live heap stayed flat, and 39 of
 * a speech node's 97 MB of arenas were free blocks. With the threshold held at 128 KiB (glibc's own
 * starting value) the same soak stayed flat and about 60 MB lower, at the same speed (docs/bench.md).
 *
 * glibc reads the variable once, when the process starts, so the process replaces itself
 * (`process.execve`: same process id, same arguments, same standard streams) with one started
 * with it. That call exists from Node 22.15 (and 23.11); on older Node the process runs with
 * glibc's defaults, and the operator can set the variable (docs/operations.md).
 */
const MALLOC_SETTINGS = Object.freeze({ MALLOC_MMAP_THRESHOLD_: "131072" });

/** Any of these set, even empty, is the operator's choice of allocator settings. */
const OPERATOR_VARIABLES = ["MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_", "GLIBC_TUNABLES"];

/**
 * @param {{
 *   argv: readonly string[];
 *   env: Record<string, string | undefined>;
 *   platform: string;
 *   glibcVersion: () => string | undefined;
 *   canReplaceProcess: boolean;
 *   debugged: boolean;
 * }} host the CLI's arguments (without node and the script), the environment, the platform, the
 *   running glibc's version (undefined with another C library), whether `process.execve` exists,
 *   and whether an inspector is open (a debugger attached to this process would lose it)
 * @returns {Record<string, string> | undefined} the variables to start again with, or undefined to
 *   run on as started
 */
function chooseMallocSettings({ argv, env, platform, glibcVersion, canReplaceProcess, debugged }) {
  if (argv[0] !== "serve") return undefined;
  if (platform !== "linux" || !canReplaceProcess || debugged) return undefined;
  if (OPERATOR_VARIABLES.some((name) => env[name] !== undefined)) return undefined;
  // musl and other C libraries ignore the variables: nothing to gain from starting again.
  if (glibcVersion() === undefined) return undefined;
  return { ...MALLOC_SETTINGS };
}

/**
 * Replaces this `hearth serve` process with one started with the allocator setting above, where
 * it applies and the operator set none; otherwise returns and the CLI runs on. The new process
 * sees HEARTH_MALLOC_SETTINGS=hearth, for the start-up log (src/cli/mallocSettings.ts).
 *
 * @param {readonly string[]} argv the CLI's arguments (without node and the script)
 */
function settleMalloc(argv) {
  const settings = chooseMallocSettings({
    argv,
    env: process.env,
    platform: process.platform,
    glibcVersion: () => process.report?.getReport().header.glibcVersionRuntime,
    canReplaceProcess: typeof process.execve === "function",
    debugged: inspectorOpen(),
  });
  if (!settings) return;
  try {
    process.execve(process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], {
      ...process.env,
      ...settings,
      HEARTH_MALLOC_SETTINGS: "hearth",
    });
  } catch {
    // Refused (a platform or sandbox without execve): run on with glibc's defaults.
  }
}

/** @returns {boolean} */
function inspectorOpen() {
  try {
    return require("node:inspector").url() !== undefined;
  } catch {
    return false; // a Node built without the inspector
  }
}

module.exports = { chooseMallocSettings, settleMalloc, MALLOC_SETTINGS, OPERATOR_VARIABLES };
