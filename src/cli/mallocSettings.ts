/** The variables that set glibc's allocator; any of them set is the operator's choice (the same list as bin/glibcMalloc.cjs's, a test checks). */
export const ALLOCATOR_VARIABLES = ["MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_", "GLIBC_TUNABLES"] as const;

/**
 * The allocator settings this process started with, and who chose them, for the start-up log:
 * `hearth serve` starts again with glibc's mmap threshold fixed where it can (bin/glibcMalloc.cjs), the
 * operator may have set their own, or the C library runs with its defaults.
 */
export function describeMallocSettings(env: NodeJS.ProcessEnv = process.env): { settings: string; chosenBy: string } {
  const set = ALLOCATOR_VARIABLES.filter((name) => env[name] !== undefined).map((name) => `${name}=${env[name]}`);
  if (set.length === 0) return { settings: "defaults", chosenBy: "the C library" };
  return { settings: set.join(" "), chosenBy: env.HEARTH_MALLOC_SETTINGS === "hearth" ? "hearth: large blocks returned to the system when freed" : "the environment" };
}
