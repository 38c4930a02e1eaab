/**
 * Depth and size of a parsed JSON value, measured without recursion: a value nested
 * thousands of levels deep is measured with a constant stack, so it can be refused before
 * any recursive code (zod, a schema compiler, JSON.stringify) sees it.
 */
export interface JsonShapeLimits {
  /** Containers (objects, arrays) nested inside one another, the outermost counting 1. */
  maxDepth: number;
  /** Values of any kind, containers included. */
  maxNodes: number;
  /** Characters of all strings and keys together. */
  maxChars: number;
}

export type JsonShapeViolation = { path: (string | number)[]; message: string };

/** The first limit the value breaks (with the path to where it broke), or undefined. */
export function checkJsonShape(value: unknown, limits: JsonShapeLimits): JsonShapeViolation | undefined {
  // Each entry: a value and the path to it; paths are rebuilt only for the one that fails.
  const stack: { value: unknown; depth: number; parent: number; key: string | number }[] = [
    { value, depth: value !== null && typeof value === "object" ? 1 : 0, parent: -1, key: "" },
  ];
  const visited: { parent: number; key: string | number }[] = [];
  let nodes = 0;
  let chars = 0;
  while (stack.length > 0) {
    const item = stack.pop()!;
    const index = visited.push({ parent: item.parent, key: item.key }) - 1;
    nodes++;
    if (typeof item.value === "string") chars += item.value.length;
    const fail = (message: string): JsonShapeViolation => ({ path: pathOf(visited, index), message });
    if (nodes > limits.maxNodes) return fail(`has more than ${limits.maxNodes} values`);
    if (chars > limits.maxChars) return fail(`has more than ${limits.maxChars} characters of strings and keys`);
    if (item.value === null || typeof item.value !== "object") continue;
    if (item.depth > limits.maxDepth) return fail(`is nested deeper than ${limits.maxDepth} levels`);
    const entries = Array.isArray(item.value) ? item.value.map((v, i) => [i, v] as const) : Object.entries(item.value);
    for (const [key, child] of entries) {
      if (typeof key === "string") chars += key.length;
      stack.push({ value: child, depth: child !== null && typeof child === "object" ? item.depth + 1 : item.depth, parent: index, key });
    }
  }
  return undefined;
}

function pathOf(visited: readonly { parent: number; key: string | number }[], index: number): (string | number)[] {
  const path: (string | number)[] = [];
  for (let at = index; visited[at]!.parent >= 0; at = visited[at]!.parent) path.push(visited[at]!.key);
  return path.reverse();
}
