import { Ajv, type ValidateFunction } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { InvalidRequestError } from "../../errors.js";

// ajv-formats is CommonJS: its function is the default export under NodeNext's interop.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (ajv: Ajv | Ajv2020) => void;

/**
 * The check after generation of a response_format schema whose keywords the grammar could not
 * all hold (`pattern`, `format`, `multipleOf`, number bounds ...): the grammar enforces the rest
 * while generating, and the finished text is validated against the schema as the caller wrote
 * it. `unenforced` names the keywords the grammar left out (x-service-schema-unenforced).
 */
export interface SchemaCheck {
  unenforced: string[];
  /** Whether a finished choice's text parses and validates against the caller's schema. */
  valid(text: string): boolean;
}

const DRAFT_07_OR_OLDER = /draft-0[4-7]/;

/** Compiles the caller's schema for the check; a schema the validator cannot compile is a 400 on `path`. */
export function schemaCheck(schema: Record<string, unknown>, unenforced: string[], path: (string | number)[]): SchemaCheck {
  const { $schema, ...rest } = schema;
  // The caller's patterns run on this node: one that can backtrack without bound would stall it.
  for (const { pattern, at } of patternsOf(rest, [])) {
    if (nestsUnboundedQuantifiers(pattern)) {
      throw InvalidRequestError.forField(
        path,
        `the pattern at ${at.join(".")} repeats a group that itself repeats without bound (like "(a+)+"), which can take exponential time to check; write it without the nesting`,
      );
    }
  }
  // Schemas name their draft, or are read as 2020-12 (zod's and the standard's), unless they use draft-07's tuple form.
  const older = (typeof $schema === "string" && DRAFT_07_OR_OLDER.test($schema)) || usesTupleItems(rest);
  const ajv = older ? new Ajv({ strict: false, validateSchema: false, logger: false }) : new Ajv2020({ strict: false, validateSchema: false, logger: false });
  addFormats(ajv);
  let validate: ValidateFunction;
  try {
    validate = ajv.compile(rest);
  } catch (error) {
    throw InvalidRequestError.forField(path, `the schema cannot be checked after generation: ${(error as Error).message}`);
  }
  return {
    unenforced,
    valid(text) {
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        return false;
      }
      return validate(value) === true;
    },
  };
}

function usesTupleItems(node: unknown): boolean {
  if (Array.isArray(node)) return node.some(usesTupleItems);
  if (typeof node !== "object" || node === null) return false;
  return Object.entries(node).some(([key, value]) => (key === "items" && Array.isArray(value)) || usesTupleItems(value));
}

/** Every regular expression of a schema (`pattern` values, `patternProperties` keys) with where it is. */
function patternsOf(node: unknown, at: (string | number)[]): { pattern: string; at: (string | number)[] }[] {
  if (Array.isArray(node)) return node.flatMap((item, i) => patternsOf(item, [...at, i]));
  if (typeof node !== "object" || node === null) return [];
  return Object.entries(node).flatMap(([key, value]) => {
    const here = [...at, key];
    const own: { pattern: string; at: (string | number)[] }[] = [];
    if (key === "pattern" && typeof value === "string") own.push({ pattern: value, at: here });
    if (key === "patternProperties" && typeof value === "object" && value !== null) {
      for (const name of Object.keys(value)) own.push({ pattern: name, at: [...here, name] });
    }
    return [...own, ...patternsOf(value, here)];
  });
}

/**
 * Whether a group holding an unbounded quantifier (`*`, `+`, `{n,}`) is itself repeated by
 * one: the shape of the expressions whose backtracking grows exponentially with the input.
 */
export function nestsUnboundedQuantifiers(pattern: string): boolean {
  const groups: boolean[] = [];
  let inClass = false;
  let lastGroupUnbounded = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === "\\") {
      i++;
      lastGroupUnbounded = false;
      continue;
    }
    if (inClass) {
      if (c === "]") inClass = false;
      continue;
    }
    const unboundedHere = c === "*" || c === "+" || (c === "{" && /^\{\d*,\}/.test(pattern.slice(i)));
    if (unboundedHere) {
      if (lastGroupUnbounded) return true;
      if (groups.length > 0) groups[groups.length - 1] = true;
    }
    lastGroupUnbounded = false;
    if (c === "[") inClass = true;
    else if (c === "(") groups.push(false);
    else if (c === ")") {
      const inner = groups.pop() ?? false;
      lastGroupUnbounded = inner;
      // A repeated group makes the group around it repeat too.
      if (inner && groups.length > 0) groups[groups.length - 1] = true;
    }
  }
  return false;
}
