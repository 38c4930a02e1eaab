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

/**
 * The first limit the value breaks (with the path to where it broke), or undefined. Values are
 * counted as their container is opened, so a million-element array is refused after the limit's
 * worth of work, not after a million (that walk took 0.85 s of the event loop for a 2 MB body).
 */
export function checkJsonShape(value: unknown, limits: JsonShapeLimits): JsonShapeViolation | undefined {
  // Every value counted so far, by index: its parent's index and its key there (paths are rebuilt
  // only for the one that fails), and its depth; `open` holds the containers still to look into.
  const parents: number[] = [-1];
  const keys: (string | number)[] = [""];
  const depths: number[] = [isContainer(value) ? 1 : 0];
  const open: { index: number; value: object }[] = [];
  let nodes = 1;
  let chars = typeof value === "string" ? value.length : 0;
  const fail = (index: number, message: string): JsonShapeViolation => ({ path: pathOf(parents, keys, index), message });
  if (nodes > limits.maxNodes) return fail(0, `has more than ${limits.maxNodes} values`);
  if (chars > limits.maxChars) return fail(0, `has more than ${limits.maxChars} characters of strings and keys`);
  if (isContainer(value)) open.push({ index: 0, value });
  while (open.length > 0) {
    const { index, value: container } = open.pop()!;
    const depth = depths[index]!;
    if (depth > limits.maxDepth) return fail(index, `is nested deeper than ${limits.maxDepth} levels`);
    // Returns the violation the child brings, if any.
    const count = (child: unknown, key: string | number): JsonShapeViolation | undefined => {
      const at = nodes++;
      parents.push(index);
      keys.push(key);
      depths.push(isContainer(child) ? depth + 1 : depth);
      if (typeof key === "string") chars += key.length;
      if (typeof child === "string") chars += child.length;
      if (nodes > limits.maxNodes) return fail(at, `has more than ${limits.maxNodes} values`);
      if (chars > limits.maxChars) return fail(at, `has more than ${limits.maxChars} characters of strings and keys`);
      if (isContainer(child)) open.push({ index: at, value: child });
      return undefined;
    };
    if (Array.isArray(container)) {
      for (let i = 0; i < container.length; i++) {
        const violation = count(container[i], i);
        if (violation) return violation;
      }
    } else {
      for (const key in container) {
        if (!Object.hasOwn(container, key)) continue;
        const violation = count((container as Record<string, unknown>)[key], key);
        if (violation) return violation;
      }
    }
  }
  return undefined;
}

function isContainer(value: unknown): value is object {
  return value !== null && typeof value === "object";
}

function pathOf(parents: readonly number[], keys: readonly (string | number)[], index: number): (string | number)[] {
  const path: (string | number)[] = [];
  for (let at = index; parents[at]! >= 0; at = parents[at]!) path.push(keys[at]!);
  return path.reverse();
}

/**
 * A bound on a body's shape read from its text, before it is parsed: JSON.parse takes about half a
 * second of the event loop for 30 MB of small values, which the walk after parsing would only then
 * refuse. Counts commas and nesting outside strings (strings are skipped with a native search, so
 * a body that is mostly one long base64 string costs almost nothing). A body with at least
 * `maxNodes` such commas has more than `maxNodes` values; nesting is exact. Paths are not known
 * here: the violation is the body's.
 */
export function scanJsonText(text: Buffer, limits: Pick<JsonShapeLimits, "maxDepth" | "maxNodes">): string | undefined {
  let commas = 0;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const byte = text[i]!;
    if (byte === QUOTE) {
      i = endOfString(text, i);
      if (i < 0) return undefined; // unterminated: JSON.parse gives the error
    } else if (byte === COMMA) {
      if (++commas >= limits.maxNodes) return `has more than ${limits.maxNodes} values`;
    } else if (byte === OPEN_BRACKET || byte === OPEN_BRACE) {
      if (++depth > limits.maxDepth) return `is nested deeper than ${limits.maxDepth} levels`;
    } else if (byte === CLOSE_BRACKET || byte === CLOSE_BRACE) {
      depth--;
    }
  }
  return undefined;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

/** The index of the quote that closes the string opened at `start`, or -1. */
function endOfString(text: Buffer, start: number): number {
  for (let at = text.indexOf(QUOTE, start + 1); at >= 0; at = text.indexOf(QUOTE, at + 1)) {
    let backslashes = 0;
    while (text[at - 1 - backslashes] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return at;
  }
  return -1;
}
