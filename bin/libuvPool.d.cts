/** The size of libuv's thread pool for a `hearth serve` process, or undefined to leave libuv's (see libuvPool.cjs). */
export function chooseLibuvPool(host: {
  argv: readonly string[];
  env: Record<string, string | undefined>;
  platform: string;
  gpuDevices: () => string[];
}): { size: number; reason: string } | undefined;

/** Sets UV_THREADPOOL_SIZE (and HEARTH_LIBUV_POOL_REASON) for a process about to run the CLI with `argv`, before its pool starts. */
export function sizeLibuvPool(argv: readonly string[]): void;

/** GPU device files on Linux (NVIDIA, DRM render nodes, AMD's kfd); `list` returns a directory's entries, [] for a missing one (default: the file system's). */
export function linuxGpuDevices(list?: (path: string) => string[]): string[];
