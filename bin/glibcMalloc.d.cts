/** glibc's allocator setting `hearth serve` starts again with where it can (see glibcMalloc.cjs). */
export const MALLOC_SETTINGS: Readonly<{ MALLOC_MMAP_THRESHOLD_: string }>;

/** Variables that, set even empty, are the operator's choice of allocator settings. */
export const OPERATOR_VARIABLES: readonly string[];

/** The variables a `hearth serve` process starts again with, or undefined to run on as started. */
export function chooseMallocSettings(host: {
  argv: readonly string[];
  env: Record<string, string | undefined>;
  platform: string;
  glibcVersion: () => string | undefined;
  canReplaceProcess: boolean;
  debugged: boolean;
}): Record<string, string> | undefined;

/** Replaces this `hearth serve` process with one started with MALLOC_SETTINGS where it applies; otherwise returns. */
export function settleMalloc(argv: readonly string[]): void;
