/**
 * Builds llama.cpp's own `llama-server` and `llama-batched-bench` from the llama.cpp source that
 * node-llama-cpp ships inside its package (a git bundle), so the comparison runs the same engine
 * source with no network. The build lives in a cache directory outside the repository and is reused.
 *
 * Run on its own: `node --import tsx scripts/bench/llamaServerBuild.ts [--cuda|--cpu]`.
 */
import { spawnSync, type SpawnSyncOptions } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { cpus, homedir } from "node:os";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { PACKAGE_ROOT } from "../../src/config/packageRoot.js";

const NODE_LLAMA_CPP_DIR = join(PACKAGE_ROOT, "node_modules", "node-llama-cpp", "llama");
const BUNDLE = join(NODE_LLAMA_CPP_DIR, "gitRelease.bundle");
const TARGETS = ["llama-server", "llama-batched-bench"] as const;

/** Where llama-server runs: the builds this script makes are "cpu" or "cuda"; a given binary may be any (node-llama-cpp's names). */
export type LlamaServerGpu = "cpu" | "cuda" | "vulkan" | "metal";

export interface LlamaServerBuild {
  /** The commit of the bundled llama.cpp source (the same one node-llama-cpp's binaries were built from). */
  commit: string;
  /** node-llama-cpp's name for the release, from llama.cpp.info.json. */
  release: string;
  gpu: LlamaServerGpu;
  server: string;
  batchedBench: string;
  directory: string;
}

/** `$HEARTH_LLAMA_CPP_CACHE`, else `$XDG_CACHE_HOME/hearth/llama.cpp`, else `~/.cache/hearth/llama.cpp`. */
export function llamaCppCacheDir(): string {
  if (process.env.HEARTH_LLAMA_CPP_CACHE) return process.env.HEARTH_LLAMA_CPP_CACHE;
  return join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "hearth", "llama.cpp");
}

/**
 * CUDA when a toolkit (nvcc) is installed and an NVIDIA GPU answers `nvidia-smi -L`. A toolkit with no
 * GPU (a build container) would spend an hour compiling kernels for a binary that cannot run here.
 */
export function detectGpu(): "cpu" | "cuda" {
  const quiet: SpawnSyncOptions = { stdio: "ignore", timeout: 10_000 };
  const hasNvcc = spawnSync("nvcc", ["--version"], quiet).status === 0;
  const hasGpu = spawnSync("nvidia-smi", ["-L"], quiet).status === 0;
  return hasNvcc && hasGpu ? "cuda" : "cpu";
}

function bundleCommit(): string {
  const heads = run("git", ["bundle", "list-heads", BUNDLE], { capture: true });
  const commit = heads.split(/\s+/)[0];
  if (!commit || !/^[0-9a-f]{40}$/.test(commit)) throw new Error(`cannot read the commit of ${BUNDLE}`);
  return commit;
}

/** Returns the cached build for the bundled source, building it first when missing. */
export function ensureLlamaServer(options: { gpu?: "cpu" | "cuda"; log?: (line: string) => void } = {}): LlamaServerBuild {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  if (!existsSync(BUNDLE)) throw new Error(`node-llama-cpp's llama.cpp source bundle is missing: ${BUNDLE}`);
  const gpu = options.gpu ?? detectGpu();
  const commit = bundleCommit();
  const release = (JSON.parse(readFileSync(join(NODE_LLAMA_CPP_DIR, "llama.cpp.info.json"), "utf8")) as { tag: string }).tag;
  const directory = join(llamaCppCacheDir(), `${commit.slice(0, 12)}-${gpu}`);
  const binDir = join(directory, "build", "bin");
  const build: LlamaServerBuild = {
    commit,
    release,
    gpu,
    directory,
    server: join(binDir, "llama-server"),
    batchedBench: join(binDir, "llama-batched-bench"),
  };
  if (existsSync(build.server) && existsSync(build.batchedBench)) return build;

  const source = join(directory, "source");
  if (!existsSync(join(source, "CMakeLists.txt"))) {
    log(`llama.cpp ${release} (${commit.slice(0, 12)}): cloning node-llama-cpp's source bundle into ${source}`);
    mkdirSync(directory, { recursive: true });
    const partial = `${source}.partial-${process.pid}`;
    rmSync(partial, { recursive: true, force: true });
    run("git", ["clone", "--quiet", BUNDLE, partial]);
    run("git", ["-C", partial, "checkout", "--quiet", commit]);
    rmSync(source, { recursive: true, force: true });
    renameSync(partial, source);
  }
  const buildDir = join(directory, "build");
  const jobs = String(Math.max(1, cpus().length));
  log(`building ${TARGETS.join(" and ")} (${gpu}, ${jobs} jobs) in ${buildDir}; this takes a while once`);
  const startedAt = performance.now();
  run("cmake", [
    "-S",
    source,
    "-B",
    buildDir,
    "-DCMAKE_BUILD_TYPE=Release",
    // The default build a user makes: tuned for this CPU, no curl (nothing is downloaded), no tests.
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=ON",
    "-DLLAMA_BUILD_SERVER=ON",
    `-DGGML_CUDA=${gpu === "cuda" ? "ON" : "OFF"}`,
  ]);
  run("cmake", ["--build", buildDir, "--config", "Release", "-j", jobs, "--target", ...TARGETS]);
  for (const binary of [build.server, build.batchedBench]) {
    if (!existsSync(binary)) throw new Error(`the build finished without ${binary}`);
  }
  log(`built in ${((performance.now() - startedAt) / 60_000).toFixed(1)} min: ${build.server}`);
  return build;
}

/**
 * A llama-server the user built (`--llama-server <path>`): its own flags, its own backends (a CUDA
 * build whose kernels match the machine's toolkit, say). What it is comes from the binary itself:
 * the commit from `--version`, the device from `--list-devices`.
 */
export function describeLlamaServer(server: string): LlamaServerBuild {
  if (!existsSync(server)) throw new Error(`--llama-server: no such file: ${server}`);
  const answer = (flag: string) => {
    const result = spawnSync(server, [flag], { encoding: "utf8", timeout: 60_000 });
    if (result.error) throw new Error(`${server} ${flag} could not run: ${result.error.message}`);
    return `${result.stdout}\n${result.stderr}`;
  };
  const version = answer("--version");
  // Upstream prints "version: 7001 (b52edd25)"; node-llama-cpp's bundled source "version: 0.5.0-dev (build 1, commit de3ff81)".
  const commit = /version: \S+ \((?:build \d+, commit )?([0-9a-f]{7,40})\)/.exec(version)?.[1];
  const release = /version: (\S+)/.exec(version)?.[1];
  if (!commit || !release) throw new Error(`${server} --version did not name a version and commit:\n${version}`);
  const gpu = firstListedDevice(answer("--list-devices"));
  const directory = dirname(server);
  return { commit, release, gpu, directory, server, batchedBench: join(directory, "llama-batched-bench") };
}

/** The device of `--list-devices`' first entry ("  CUDA0: NVIDIA H100 …", "  Vulkan0: …", "  MTL0: …"); none listed is the CPU. */
function firstListedDevice(listing: string): LlamaServerGpu {
  const backend = /^\s*(CUDA|Vulkan|MTL)\d+:/m.exec(listing)?.[1];
  return backend === "CUDA" ? "cuda" : backend === "Vulkan" ? "vulkan" : backend === "MTL" ? "metal" : "cpu";
}

/**
 * A comparison of two servers on different devices compares the devices: node-llama-cpp falls back
 * to the CPU by itself when its GPU binaries do not load (a missing CUDA runtime), and llama-server
 * offloads whatever its build supports. Returns what to warn about, if anything.
 */
export function deviceMismatch(hearthEngine: string | null, llamaServerGpu: LlamaServerGpu): string | undefined {
  const hearthDevice = hearthEngine === null ? undefined : /^llama\.cpp\/(\w+)$/.exec(hearthEngine)?.[1];
  if (hearthDevice === undefined) return `Hearth's answer did not name its llama.cpp device (x-service-model-router: ${hearthEngine ?? "missing"})`;
  if (hearthDevice === llamaServerGpu) return undefined;
  return `the two servers run on different devices (Hearth: ${hearthDevice}, llama-server: ${llamaServerGpu}): the ratios compare devices, not servers`;
}

function run(command: string, args: string[], options: { capture?: boolean } = {}): string {
  const result = spawnSync(command, args, { encoding: "utf8", stdio: options.capture ? ["ignore", "pipe", "inherit"] : "inherit" });
  if (result.error) throw new Error(`${command} could not start: ${result.error.message}`);
  if (result.status !== 0) throw new Error(`${command} ${args.join(" ")} exited with ${result.status ?? result.signal}`);
  return result.stdout ?? "";
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const forced = process.argv.includes("--cuda") ? "cuda" : process.argv.includes("--cpu") ? "cpu" : undefined;
  const build = ensureLlamaServer({ gpu: forced });
  process.stdout.write(`${JSON.stringify(build, null, 2)}\n`);
}
