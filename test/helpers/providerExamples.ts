/**
 * Request values built from the provider's own document: a schema's `example` where it has one,
 * otherwise its required properties built the same way (the first branch of an anyOf/oneOf, the
 * first value of an enum, the default). What a test then changes is its own, named, adjustment.
 */

type Json = Record<string, any>;

function resolve(doc: Json, schema: Json | undefined): Json {
  let node = schema ?? {};
  while (typeof node.$ref === "string") {
    node = node.$ref
      .replace(/^#\//, "")
      .split("/")
      .reduce((at: Json, part: string) => at?.[part.replaceAll("~1", "/").replaceAll("~0", "~")], doc);
  }
  return node;
}

/** The provider's example value for a schema (binary strings are left out: the caller sends a file). */
export function exampleOf(doc: Json, schema: Json | undefined, depth = 0): unknown {
  const node = resolve(doc, schema);
  if (depth > 12) return undefined;
  if ("example" in node) return structuredClone(node.example);
  if (Array.isArray(node.examples) && node.examples.length > 0) return structuredClone(node.examples[0]);
  if ("default" in node) return structuredClone(node.default);
  if (Array.isArray(node.enum)) return node.enum[0];
  if (Array.isArray(node.allOf)) {
    const parts = node.allOf.map((part: Json) => exampleOf(doc, part, depth + 1));
    return parts.every((p: unknown) => p && typeof p === "object" && !Array.isArray(p)) ? Object.assign({}, ...parts) : parts[0];
  }
  const branches = node.anyOf ?? node.oneOf;
  if (Array.isArray(branches) && branches.length > 0) return exampleOf(doc, branches[0], depth + 1);
  const type = Array.isArray(node.type) ? node.type[0] : node.type;
  if (type === "object" || node.properties) {
    const out: Json = {};
    for (const name of (node.required ?? []) as string[]) {
      const value = exampleOf(doc, node.properties?.[name], depth + 1);
      if (value !== undefined) out[name] = value;
    }
    return out;
  }
  if (type === "array") {
    const item = exampleOf(doc, node.items, depth + 1);
    return item === undefined ? [] : [item];
  }
  if (type === "string") return node.format === "binary" ? undefined : "example";
  if (type === "integer" || type === "number") return typeof node.minimum === "number" ? Math.max(node.minimum, 1) : 1;
  if (type === "boolean") return false;
  return undefined;
}

/** The provider's example for one operation's request body of a content type. */
export function requestExample(doc: Json, method: string, path: string, contentType = "application/json"): Json {
  const content = doc.paths[path]?.[method]?.requestBody?.content?.[contentType];
  if (!content) throw new Error(`the provider's document has no ${contentType} body for ${method.toUpperCase()} ${path}`);
  const named = content.examples && Object.values(content.examples as Json)[0];
  if (named && "value" in named) return structuredClone(named.value);
  if ("example" in content) return structuredClone(content.example);
  return (exampleOf(doc, content.schema) ?? {}) as Json;
}

/** The provider's example for one of an operation's parameters. */
export function parameterExample(doc: Json, method: string, path: string, name: string): unknown {
  const parameter = ((doc.paths[path]?.[method]?.parameters ?? []) as Json[]).map((p) => resolve(doc, p)).find((p) => p.name === name);
  if (!parameter) throw new Error(`the provider's document has no parameter ${name} on ${method.toUpperCase()} ${path}`);
  return "example" in parameter ? parameter.example : exampleOf(doc, parameter.schema);
}
