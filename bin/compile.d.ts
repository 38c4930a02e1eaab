/** Brings `<root>/dist` up to date with `<root>/src`; the compiled CLI's URL, or null to run the sources through tsx. */
export function compileSources(root?: string): Promise<string | null>;
