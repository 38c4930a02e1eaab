/**
 * The part of JSON Schema that engines can enforce while generating, as a small normalized
 * tree. Everything an output generated from this tree contains validates against the
 * original schema: keywords that constrain values and cannot be enforced token by token
 * (pattern, multipleOf, most numeric ranges, allOf, not ...) are refused with the place
 * they occur, rather than silently ignored. Annotations (title, description, default,
 * examples, unknown formats) are ignored, as JSON Schema allows.
 */

export type JsonShape =
  | { kind: "any" }
  | { kind: "string"; minLength: number; maxLength: number | null; format: StringFormat | null }
  | { kind: "integer"; min: number | null; max: number | null }
  | { kind: "number"; nonNegative: boolean }
  | { kind: "boolean" }
  | { kind: "null" }
  | { kind: "literal"; values: unknown[] }
  | { kind: "object"; properties: { name: string; shape: JsonShape; required: boolean }[]; open: boolean }
  | { kind: "array"; prefix: JsonShape[]; items: JsonShape | null; minItems: number; maxItems: number | null }
  | { kind: "anyOf"; options: JsonShape[] }
  | { kind: "ref"; name: string };

export type StringFormat = "date" | "time" | "date-time" | "uuid";

export interface JsonSchemaSubset {
  root: JsonShape;
  /** Named shapes referenced by `{ kind: "ref" }` ($defs / definitions). */
  defs: Record<string, JsonShape>;
}

/** A schema outside the subset; `path` is where, from the schema's root. */
export class UnsupportedJsonSchemaError extends Error {
  override name = "UnsupportedJsonSchemaError";
  constructor(
    readonly path: readonly (string | number)[],
    readonly reason: string,
  ) {
    super(`${path.length ? `at ${path.join(".")}: ` : ""}${reason}`);
  }
}

/** Integers are generated with at most this many digits so they stay exact in every JSON parser. */
export const MAX_INTEGER_DIGITS = 15;
const LARGEST_GENERATED_INTEGER = 10 ** MAX_INTEGER_DIGITS - 1;
/** Integer ranges up to this size are enforced exactly by listing their values. */
const ENUMERABLE_RANGE = 1000;
/**
 * Lengths and item counts are enforced up to this many repetitions: llama.cpp's grammar parser
 * refuses a larger minimum outright and silently drops a larger maximum (MAX_REPETITION_THRESHOLD).
 */
export const MAX_ENFORCED_COUNT = 2000;
/**
 * All enforced counts of a schema together (a distinct string length range once, each array
 * once): llama.cpp writes a bounded repetition out in full while parsing the grammar, on the
 * event loop, about 0.5 µs a repetition; 600 strings of 2,000 characters took 430 ms.
 */
export const MAX_ENFORCED_REPETITIONS = 50_000;

const ANNOTATIONS = new Set([
  "$schema",
  "$id",
  "$comment",
  "$anchor",
  "title",
  "description",
  "default",
  "examples",
  "deprecated",
  "readOnly",
  "writeOnly",
  "contentEncoding",
  "contentMediaType",
  "strict",
  "name",
]);
const UNSUPPORTED = new Set([
  "pattern",
  "patternProperties",
  "multipleOf",
  "allOf",
  "not",
  "if",
  "then",
  "else",
  "dependentRequired",
  "dependentSchemas",
  "dependencies",
  "propertyNames",
  "contains",
  "minContains",
  "maxContains",
  "uniqueItems",
  "unevaluatedProperties",
  "unevaluatedItems",
  "minProperties",
  "maxProperties",
  "$dynamicRef",
  "$recursiveRef",
]);
const TYPES = ["string", "integer", "number", "boolean", "null", "object", "array"] as const;
type TypeName = (typeof TYPES)[number];

/**
 * How keywords that constrain values but cannot be enforced while generating are treated:
 * refused (the default), or, when `unenforced` is given, left out of the tree (or loosened to
 * the nearest bound that can be enforced) with their names added to it, so the caller can
 * check them on the finished output. A schema that is not one (an unknown type, a bad $ref,
 * maxLength below minLength ...) is refused either way.
 */
export interface JsonSchemaSubsetOptions {
  unenforced?: Set<string>;
}

/** Checks a JSON Schema and turns it into the normalized tree; throws UnsupportedJsonSchemaError. */
export function toJsonSchemaSubset(schema: unknown, options: JsonSchemaSubsetOptions = {}): JsonSchemaSubset {
  const { unenforced } = options;
  /** A keyword the grammar cannot hold: refused, or (with `unenforced`) named and left to the check after generation. */
  const cannotEnforce = (path: (string | number)[], keyword: string, reason: string): void => {
    if (!unenforced) throw new UnsupportedJsonSchemaError([...path, keyword], reason);
    unenforced.add(keyword);
  };
  const defs: Record<string, JsonShape> = {};
  const rawDefs = new Map<string, { schema: unknown; path: (string | number)[] }>();
  if (isObject(schema)) {
    for (const key of ["$defs", "definitions"] as const) {
      const group = schema[key];
      if (group === undefined) continue;
      if (!isObject(group)) throw new UnsupportedJsonSchemaError([key], `${key} must be an object of schemas`);
      // A JSON Pointer escapes "~" and "/" in names ("a/b" is "#/$defs/a~1b").
      for (const [name, sub] of Object.entries(group)) rawDefs.set(`#/${key}/${name.replaceAll("~", "~0").replaceAll("/", "~1")}`, { schema: sub, path: [key, name] });
    }
  }
  // The reference itself (less "#/") names a definition: "a-b" and "a/b" are different ones.
  const refName = (ref: string) => ref.slice(2);
  const convert = (raw: unknown, path: (string | number)[]): JsonShape => {
    let node = raw;
    if (unenforced && isObject(node) && Object.keys(node).some((k) => UNSUPPORTED.has(k))) {
      for (const key of Object.keys(node)) if (UNSUPPORTED.has(key)) unenforced.add(key);
      node = Object.fromEntries(Object.entries(node).filter(([k]) => !UNSUPPORTED.has(k)));
    }
    if (node === true || (isObject(node) && Object.keys(node).every((k) => ANNOTATIONS.has(k)))) return { kind: "any" };
    if (node === false) throw new UnsupportedJsonSchemaError(path, "a schema of false accepts nothing");
    if (!isObject(node)) throw new UnsupportedJsonSchemaError(path, "a schema must be an object or a boolean");

    for (const key of Object.keys(node)) {
      if (UNSUPPORTED.has(key)) throw new UnsupportedJsonSchemaError([...path, key], `the keyword "${key}" cannot be enforced while generating`);
    }
    if (typeof node.$ref === "string") {
      const target = rawDefs.get(node.$ref);
      if (!target) throw new UnsupportedJsonSchemaError([...path, "$ref"], `only references to #/$defs/<name> or #/definitions/<name> are supported (got "${node.$ref}")`);
      const name = refName(node.$ref);
      if (!(name in defs)) {
        defs[name] = { kind: "any" }; // placeholder while converting, so recursive schemas terminate
        defs[name] = convert(target.schema, target.path);
      }
      return { kind: "ref", name };
    }
    if ("const" in node) return { kind: "literal", values: [node.const] };
    if ("enum" in node) {
      if (!Array.isArray(node.enum) || node.enum.length === 0) throw new UnsupportedJsonSchemaError([...path, "enum"], "enum must be a non-empty array");
      return { kind: "literal", values: node.enum };
    }
    for (const key of ["anyOf", "oneOf"] as const) {
      if (node[key] === undefined) continue;
      const options = node[key];
      if (!Array.isArray(options) || options.length === 0) throw new UnsupportedJsonSchemaError([...path, key], `${key} must be a non-empty array of schemas`);
      const rest = Object.fromEntries(Object.entries(node).filter(([k]) => k !== key));
      const base = Object.keys(rest).some((k) => !ANNOTATIONS.has(k)) ? rest : null;
      return { kind: "anyOf", options: options.map((option, i) => convert(base ? { ...base, ...(option as object) } : option, [...path, key, i])) };
    }

    let types: TypeName[];
    if (node.type === undefined) types = inferTypes(node);
    else {
      const list = Array.isArray(node.type) ? node.type : [node.type];
      for (const [i, type] of list.entries()) {
        if (!TYPES.includes(type as TypeName)) throw new UnsupportedJsonSchemaError([...path, "type", ...(Array.isArray(node.type) ? [i] : [])], `unknown type "${String(type)}"`);
      }
      types = list as TypeName[];
    }
    if (node.nullable === true && !types.includes("null")) types = [...types, "null"];
    if (types.length === 0) return { kind: "any" };
    const shapes = types.map((type) => convertTyped(type, node, path));
    return shapes.length === 1 ? shapes[0]! : { kind: "anyOf", options: shapes };
  };

  const countedRanges = new Set<string>();
  let repetitions = 0;
  /**
   * A count range loosened to what the grammar holds: a minimum past the limit becomes the
   * limit, a maximum past it none; past the schema's whole budget, the range is left out.
   */
  const enforcedCounts = (path: (string | number)[], minKey: string, min: number, maxKey: string, max: number | null): [number, number | null] => {
    const reason = (key: string) => `${key} above ${MAX_ENFORCED_COUNT} cannot be enforced while generating`;
    if (min > MAX_ENFORCED_COUNT) cannotEnforce(path, minKey, reason(minKey));
    if (max !== null && max > MAX_ENFORCED_COUNT) cannotEnforce(path, maxKey, reason(maxKey));
    const range: [number, number | null] = [Math.min(min, MAX_ENFORCED_COUNT), max !== null && max > MAX_ENFORCED_COUNT ? null : max];
    // Identical string ranges share one rule; arrays count each time (their items differ).
    const key = minKey === "minLength" ? `${range[0]},${range[1]}` : path.join("\u0000");
    const cost = range[1] ?? range[0];
    if (cost === 0 || countedRanges.has(key)) return range;
    if (repetitions + cost > MAX_ENFORCED_REPETITIONS) {
      const budget = `the schema's lengths and item counts together ask for more than ${MAX_ENFORCED_REPETITIONS} repetitions, more than the grammar is built with`;
      if (range[0] > 0) cannotEnforce(path, minKey, budget);
      if (range[1] !== null) cannotEnforce(path, maxKey, budget);
      return [0, null];
    }
    countedRanges.add(key);
    repetitions += cost;
    return range;
  };

  const convertTyped = (type: TypeName, node: Record<string, unknown>, path: (string | number)[]): JsonShape => {
    const count = (key: string, fallback: number | null): number | null => {
      const value = node[key];
      if (value === undefined) return fallback;
      if (typeof value !== "number" || !Number.isInteger(value) || value < 0) throw new UnsupportedJsonSchemaError([...path, key], `${key} must be a non-negative integer`);
      return value;
    };
    switch (type) {
      case "string": {
        let minLength = count("minLength", 0)!;
        let maxLength = count("maxLength", null);
        if (maxLength !== null && maxLength < minLength) throw new UnsupportedJsonSchemaError([...path, "maxLength"], "maxLength is below minLength");
        const format = typeof node.format === "string" && ["date", "time", "date-time", "uuid"].includes(node.format) ? (node.format as StringFormat) : null;
        // Other formats are annotations to the grammar; a caller that checks the output afterwards checks them there.
        if (unenforced && typeof node.format === "string" && !format) unenforced.add("format");
        if (format && (node.minLength !== undefined || node.maxLength !== undefined)) {
          for (const key of ["minLength", "maxLength"]) {
            if (node[key] !== undefined) cannotEnforce(path, key, `format cannot be combined with minLength or maxLength`);
          }
          minLength = 0;
          maxLength = null;
        } else [minLength, maxLength] = enforcedCounts(path, "minLength", minLength, "maxLength", maxLength);
        return { kind: "string", minLength, maxLength, format };
      }
      case "integer":
        return integerShape(node, path, cannotEnforce);
      case "number": {
        const { minimum, maximum, exclusiveMinimum, exclusiveMaximum } = node;
        for (const [key, value] of Object.entries({ minimum, maximum, exclusiveMinimum, exclusiveMaximum })) {
          if (value !== undefined && (typeof value !== "number" || !Number.isFinite(value))) throw new UnsupportedJsonSchemaError([...path, key], `${key} must be a number`);
        }
        if (maximum !== undefined) cannotEnforce(path, "maximum", "an upper bound on a number cannot be enforced while generating; use an integer range or an enum");
        if (exclusiveMaximum !== undefined)
          cannotEnforce(path, "exclusiveMaximum", "an upper bound on a number cannot be enforced while generating; use an integer range or an enum");
        if (exclusiveMinimum !== undefined) cannotEnforce(path, "exclusiveMinimum", "exclusiveMinimum on a number cannot be enforced while generating");
        if (minimum !== undefined && minimum !== 0) cannotEnforce(path, "minimum", "on a number only minimum 0 can be enforced while generating");
        // A positive lower bound still rules out negative numbers, which the grammar can hold.
        const nonNegative = (typeof minimum === "number" && minimum >= 0) || (typeof exclusiveMinimum === "number" && exclusiveMinimum >= 0);
        return { kind: "number", nonNegative };
      }
      case "boolean":
        return { kind: "boolean" };
      case "null":
        return { kind: "null" };
      case "object": {
        const properties = node.properties ?? {};
        if (!isObject(properties)) throw new UnsupportedJsonSchemaError([...path, "properties"], "properties must be an object of schemas");
        const required = node.required ?? [];
        if (!Array.isArray(required) || required.some((r) => typeof r !== "string"))
          throw new UnsupportedJsonSchemaError([...path, "required"], "required must be an array of property names");
        for (const name of required as string[]) {
          if (!(name in properties)) throw new UnsupportedJsonSchemaError([...path, "required"], `"${name}" is required but not described in properties`);
        }
        const additional = node.additionalProperties;
        if (additional !== undefined && typeof additional !== "boolean" && !isObject(additional))
          throw new UnsupportedJsonSchemaError([...path, "additionalProperties"], "additionalProperties must be a boolean or a schema");
        const list = Object.entries(properties).map(([name, sub]) => ({
          name,
          shape: convert(sub, [...path, "properties", name]),
          required: (required as string[]).includes(name),
        }));
        // An object described by no properties at all is free-form; described ones get only their own keys (always valid).
        return { kind: "object", properties: list, open: list.length === 0 && additional !== false };
      }
      case "array": {
        let minItems = count("minItems", 0)!;
        let maxItems = count("maxItems", null);
        if (maxItems !== null && maxItems < minItems) throw new UnsupportedJsonSchemaError([...path, "maxItems"], "maxItems is below minItems");
        [minItems, maxItems] = enforcedCounts(path, "minItems", minItems, "maxItems", maxItems);
        const prefixItems = node.prefixItems ?? (Array.isArray(node.items) ? node.items : []);
        if (!Array.isArray(prefixItems)) throw new UnsupportedJsonSchemaError([...path, "prefixItems"], "prefixItems must be an array of schemas");
        const prefix = prefixItems.map((item, i) => convert(item, [...path, "prefixItems", i]));
        const itemsSchema = Array.isArray(node.items) ? node.additionalItems : node.items;
        if (itemsSchema === false && minItems > prefix.length) throw new UnsupportedJsonSchemaError([...path, "minItems"], "minItems asks for more items than the schema allows");
        const items = itemsSchema === false ? null : itemsSchema === undefined ? { kind: "any" as const } : convert(itemsSchema, [...path, "items"]);
        return { kind: "array", prefix, items, minItems, maxItems: itemsSchema === false ? Math.min(maxItems ?? prefix.length, prefix.length) : maxItems };
      }
    }
  };

  const root = convert(schema, []);
  refuseEmptyCycles(root, defs, new Map([...rawDefs].map(([ref, { path }]) => [refName(ref), path])));
  return { root, defs };
}

/**
 * A reference that comes back to itself before any value is written (`a` is `$ref b`, `b` is
 * `anyOf [$ref a, ...]`) describes no JSON a model could start writing, and a grammar cannot hold
 * it (left recursion). Every other shape writes a character before anything it refers to.
 */
function refuseEmptyCycles(root: JsonShape, defs: Record<string, JsonShape>, defPaths: Map<string, (string | number)[]>): void {
  const leading = (shape: JsonShape): string[] => (shape.kind === "ref" ? [shape.name] : shape.kind === "anyOf" ? shape.options.flatMap(leading) : []);
  const state = new Map<string, "visiting" | "done">();
  const visit = (name: string): void => {
    if (state.get(name) === "done") return;
    if (state.get(name) === "visiting") {
      throw new UnsupportedJsonSchemaError(defPaths.get(name) ?? [], "this definition refers back to itself before any value is written, so no JSON can start it");
    }
    state.set(name, "visiting");
    for (const next of leading(defs[name]!)) visit(next);
    state.set(name, "done");
  };
  for (const name of [...leading(root), ...Object.keys(defs)]) visit(name);
}

/**
 * Integer bounds are enforced exactly where that is cheap: small ranges are listed, and the
 * sign and digit count cover non-negative, positive and symmetric power-of-ten ranges
 * (which includes the safe-integer bounds schema generators such as zod write).
 */
function integerShape(node: Record<string, unknown>, path: (string | number)[], cannotEnforce: (path: (string | number)[], keyword: string, reason: string) => void): JsonShape {
  const bound = (key: string): number | null => {
    const value = node[key];
    if (value === undefined) return null;
    if (typeof value !== "number" || !Number.isFinite(value)) throw new UnsupportedJsonSchemaError([...path, key], `${key} must be a number`);
    return value;
  };
  let min = bound("minimum");
  let max = bound("maximum");
  const exMin = bound("exclusiveMinimum");
  const exMax = bound("exclusiveMaximum");
  if (exMin !== null) min = Math.max(min ?? -Infinity, Math.floor(exMin) + 1);
  if (exMax !== null) max = Math.min(max ?? Infinity, Math.ceil(exMax) - 1);
  if (min !== null) min = Math.ceil(min);
  if (max !== null) max = Math.floor(max);
  if (min !== null && max !== null && max < min) throw new UnsupportedJsonSchemaError([...path, "maximum"], "the range holds no integer");
  // Bounds wider than what is ever generated constrain nothing.
  if (min !== null && min <= -LARGEST_GENERATED_INTEGER) min = null;
  if (max !== null && max >= LARGEST_GENERATED_INTEGER) max = null;
  const enumerable = min !== null && max !== null && max - min < ENUMERABLE_RANGE;
  const digitBound = max === null || isAllNines(max);
  const signBound = min === null || min === 0 || min === 1 || (max !== null && min === -max && isAllNines(max));
  if (!enumerable && !(digitBound && signBound)) {
    const reason = `this integer range cannot be enforced while generating (supported: ranges of at most ${ENUMERABLE_RANGE} values, minimum 0 or 1, maximum 9, 99, 999 ...)`;
    const keyword = (bound: "minimum" | "maximum") => {
      const exclusive = bound === "minimum" ? "exclusiveMinimum" : "exclusiveMaximum";
      return node[bound] === undefined && node[exclusive] !== undefined ? exclusive : bound;
    };
    // Refused, or loosened to the nearest range the grammar holds (the exact one is checked afterwards).
    if (min !== null && !signBound) cannotEnforce(path, keyword("minimum"), reason);
    if (!digitBound) cannotEnforce(path, keyword("maximum"), reason);
    if (min !== null && !signBound) min = min >= 1 ? 1 : min >= 0 ? 0 : null;
    if (max !== null && !digitBound) max = max > 0 ? 10 ** String(max).length - 1 : null;
    if (min !== null && max === null && min < 0) min = null;
    if (min === null && max !== null && max < 0) max = null;
  }
  return { kind: "integer", min, max };
}

const isAllNines = (n: number) => n > 0 && /^9+$/.test(String(n));

function inferTypes(node: Record<string, unknown>): TypeName[] {
  if ("properties" in node || "additionalProperties" in node || "required" in node) return ["object"];
  if ("items" in node || "prefixItems" in node || "minItems" in node || "maxItems" in node) return ["array"];
  if ("minLength" in node || "maxLength" in node || "format" in node) return ["string"];
  if ("minimum" in node || "maximum" in node) return ["number"];
  return [];
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The free-form object json_object asks for. */
export const ANY_JSON_OBJECT: JsonSchemaSubset = { root: { kind: "object", properties: [], open: true }, defs: {} };
