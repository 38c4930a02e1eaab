import { MAX_INTEGER_DIGITS, type JsonSchemaSubset, type JsonShape, type StringFormat } from "../jsonSchemaSubset.js";

/**
 * GBNF (llama.cpp's grammar format) for JSON that validates against a schema subset.
 * The JSON is compact (no whitespace at all, which is always valid and keeps a model from
 * padding forever), integers carry no exponent and at most 15 digits (exact in every
 * parser), and free-form values nest at most a few levels. Strings are bounded only by the
 * schema's maxLength: where the schema leaves them open, a model may write until max tokens.
 */
export function jsonGrammar(subset: JsonSchemaSubset): string {
  const rules = new Map<string, string>();
  // Rules are context-free productions: one rule per distinct body, however often a schema repeats it.
  const byBody = new Map<string, string>();
  let counter = 0;
  const define = (hint: string, body: string): string => {
    const existing = byBody.get(body);
    if (existing) return existing;
    const name = `${hint}-${counter++}`;
    rules.set(name, body);
    byBody.set(body, name);
    return name;
  };
  // Definitions are numbered: their names may hold any character, and two must never meet in one rule name.
  const defNames = new Map(Object.keys(subset.defs).map((name, i) => [name, `def-${i}`]));
  /**
   * A sub-shape as one symbol. Shapes are written once, as named rules, wherever they are used:
   * written inline, an array's items (written twice) doubled the grammar at every level of
   * nesting, and a repeated group that holds rules of its own multiplies llama.cpp's count of
   * generated rules past its limit ("exceeds sane defaults").
   */
  const symbol = (shape: JsonShape): string => {
    const body = shapeRule(shape);
    return SINGLE_SYMBOL.test(body) ? body : define("value", body);
  };

  const anyJson = (depth: number): string => {
    const leaf = '(string | number | "true" | "false" | "null")';
    if (depth >= MAX_FREE_DEPTH) return leaf;
    const inner = anyJson(depth + 1);
    return define("any", `${leaf} | "[" (${inner} ("," ${inner})*)? "]" | "{" (string ":" ${inner} ("," string ":" ${inner})*)? "}"`);
  };

  const shapeRule = (shape: JsonShape): string => {
    switch (shape.kind) {
      case "any":
        return anyJson(1);
      case "string":
        if (shape.format) return FORMAT_RULES[shape.format];
        return `"\\"" char${repeat(shape.minLength, shape.maxLength)} "\\""`;
      case "integer":
        // Named once: a bounded range spells out up to 1,000 literals.
        return define("integer", integerRule(shape.min, shape.max));
      case "number":
        return shape.nonNegative ? "unsigned-number" : "number";
      case "boolean":
        return `("true" | "false")`;
      case "null":
        return `"null"`;
      case "literal":
        return `(${shape.values.map((value) => literal(JSON.stringify(value))).join(" | ")})`;
      case "ref":
        return defNames.get(shape.name)!;
      case "anyOf":
        return `(${shape.options.map(symbol).join(" | ")})`;
      case "array": {
        const { prefix, minItems, maxItems } = shape;
        const items = shape.items ? symbol(shape.items) : null;
        // Elements from position i on (i already written): fixed prefix items, then `items`
        // repeated, cut short only once minItems are there.
        const from = (i: number): string => {
          const comma = i === 0 ? "" : `"," `;
          if (i < prefix.length) {
            const element = `${comma}${symbol(prefix[i]!)} ${from(i + 1)}`.trim();
            // An optional tail is a rule of its own: nested inline, each level's group would count all the rules inside it against llama.cpp's limit.
            return i < minItems ? element : define("items", `(${element})?`);
          }
          if (!items || maxItems === i) return "";
          const required = Math.max(0, minItems - i);
          const most = maxItems === null ? null : maxItems - i;
          // The repetition is a rule of its own, so an optional group around it holds one rule, not one per repetition.
          const rest = (min: number, max: number | null) => (max === 0 ? "" : define("items", `("," ${items})${repeat(min, max)}`));
          if (i > 0) return rest(required, most);
          const tail = rest(Math.max(0, required - 1), most === null ? null : most - 1);
          return required > 0 ? `${items} ${tail}`.trim() : `(${`${items} ${tail}`.trim()})?`;
        };
        return `"[" ${from(0)} "]"`;
      }
      case "object": {
        if (shape.open && shape.properties.length === 0) {
          const value = anyJson(1);
          return define("object", `"{" (string ":" ${value} ("," string ":" ${value})*)? "}"`);
        }
        const pairs = shape.properties.map((p) => `${literal(JSON.stringify(p.name))} ":" ${symbol(p.shape)}`);
        // head(i): the first emitted property is i or later; tail(i): properties from i on, after one was emitted.
        const n = pairs.length;
        const tails: string[] = new Array(n + 1);
        tails[n] = "";
        // tail(0) is never needed: the first written property is the head's.
        for (let i = n - 1; i >= 1; i--) {
          const item = `"," ${pairs[i]}`;
          const rest = tails[i + 1];
          const body = shape.properties[i]!.required ? `${item} ${rest}` : `(${item})? ${rest}`;
          tails[i] = define("tail", body.trim() || `""`);
        }
        // Only the heads reachable from the first property are written.
        const head = (i: number): string => {
          if (i === n) return `""`;
          const withThis = `${pairs[i]} ${i + 1 < n ? tails[i + 1] : ""}`.trim();
          return shape.properties[i]!.required ? define("head", withThis) : define("head", `${withThis} | ${head(i + 1)}`);
        };
        return `"{" ${n > 0 ? head(0) : ""} "}"`;
      }
    }
  };

  for (const [name, shape] of Object.entries(subset.defs)) rules.set(defNames.get(name)!, shapeRule(shape));
  const root = shapeRule(subset.root);
  const lines = [`root ::= ${root}`, ...[...rules].map(([name, body]) => `${name} ::= ${body}`), ...COMMON_RULES];
  return lines.join("\n");
}

/** A rule name, or a literal without repetition: what needs no rule of its own. */
const SINGLE_SYMBOL = /^(?:[a-z][a-z0-9-]*|"(?:[^"\\]|\\.)*")$/;

/** Free-form values (json_object, untyped items) nest at most this deep. */
const MAX_FREE_DEPTH = 3;

const COMMON_RULES = [
  `char ::= [^"\\\\\\x00-\\x1F\\x7F] | "\\\\" ["\\\\/bfnrt] | "\\\\u" [0-9a-fA-F]{4}`,
  `string ::= "\\"" char* "\\""`,
  `unsigned-number ::= ("0" | [1-9] [0-9]{0,${MAX_INTEGER_DIGITS - 1}}) ("." [0-9]{1,6})?`,
  `number ::= "-"? unsigned-number`,
];

const FORMAT_RULES: Record<StringFormat, string> = {
  date: `"\\"" [0-9]{4} "-" ("0" [1-9] | "1" [0-2]) "-" ("0" [1-9] | [12] [0-9] | "3" [01]) "\\""`,
  time: `"\\"" ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,3})? ("Z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9]) "\\""`,
  "date-time": `"\\"" [0-9]{4} "-" ("0" [1-9] | "1" [0-2]) "-" ("0" [1-9] | [12] [0-9] | "3" [01]) "T" ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,3})? ("Z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9]) "\\""`,
  uuid: `"\\"" [0-9a-f]{8} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{12} "\\""`,
};

function integerRule(min: number | null, max: number | null): string {
  if (min !== null && max !== null && max - min < 1000) {
    const values: string[] = [];
    for (let v = min; v <= max; v++) values.push(literal(String(v)));
    return `(${values.join(" | ")})`;
  }
  const digits = (bound: number | null) => `[1-9] [0-9]{0,${(bound === null ? MAX_INTEGER_DIGITS : String(bound).length) - 1}}`;
  const options: string[] = [];
  if (min === null || min < 0) options.push(`"-" ${digits(min === null ? null : -min)}`);
  if (min === null || min <= 0) options.push(`"0"`);
  options.push(digits(max));
  return `(${options.join(" | ")})`;
}

/** `{m,n}` (or `*`) for a repetition count range. */
function repeat(min: number, max: number | null): string {
  if (max === null) return min === 0 ? "*" : `{${min},}`;
  return `{${min},${max}}`;
}

/** A GBNF string literal for exact text. */
export function literal(text: string): string {
  let out = '"';
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    if (ch === '"' || ch === "\\") out += `\\${ch}`;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, "0")}`;
    else out += ch;
  }
  return `${out}"`;
}
