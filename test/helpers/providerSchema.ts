import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Ajv2020 } from "ajv/dist/2020.js";
import { parse as parseYaml } from "yaml";

/**
 * The provider's OpenAPI document, the reference the wire shapes are checked against: a copy of
 * the one the API brief ships, kept under test/reference so a clone runs the checks on its own.
 */
export const PROVIDER_OPENAPI_PATH = fileURLToPath(new URL("../reference/provider-openapi.yaml", import.meta.url));

/** The provider's whole document, parsed. */
export function providerDocument(): Json {
  return parseYaml(readFileSync(PROVIDER_OPENAPI_PATH, "utf8")) as Json;
}

type Json = Record<string, any>;

/**
 * A validator for one of the provider's component schemas. `adjust` may widen a copy of the
 * schema where the node deliberately follows the standard instead (each caller says why).
 */
export function providerSchemaValidator(name: string, adjust: (schema: Json) => void = () => {}) {
  const doc = providerDocument();
  const schema = structuredClone(doc.components.schemas[name]) as Json;
  if (!schema) throw new Error(`the provider's document has no schema ${name}`);
  adjust(schema);
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  const validate = ajv.compile(schema);
  return (body: unknown): string | null => (validate(body) ? null : `${name}: ${ajv.errorsText(validate.errors)}`);
}

/**
 * The provider's document (OpenAPI 3.0) made JSON Schema 2020-12 for ajv: `nullable: true` becomes
 * a `null` branch and the boolean `exclusiveMinimum`/`exclusiveMaximum` of 3.0 the numeric form.
 * Nothing else changes, so a body that passes here passes the provider's own reading of it.
 */
export function providerJsonSchemaDocument(): Json {
  const doc = providerDocument();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const item of node) visit(item);
      return;
    }
    if (!node || typeof node !== "object") return;
    const schema = node as Json;
    for (const value of Object.values(schema)) visit(value);
    if (schema.exclusiveMinimum === true && typeof schema.minimum === "number") {
      schema.exclusiveMinimum = schema.minimum;
      delete schema.minimum;
    } else if (typeof schema.exclusiveMinimum === "boolean") delete schema.exclusiveMinimum;
    if (schema.exclusiveMaximum === true && typeof schema.maximum === "number") {
      schema.exclusiveMaximum = schema.maximum;
      delete schema.maximum;
    } else if (typeof schema.exclusiveMaximum === "boolean") delete schema.exclusiveMaximum;
    if (schema.nullable === true) {
      delete schema.nullable;
      if (typeof schema.type === "string") {
        schema.type = [schema.type, "null"];
        if (Array.isArray(schema.enum) && !schema.enum.includes(null)) schema.enum = [...schema.enum, null];
      } else if (schema.type === undefined) {
        const copy = { ...schema };
        for (const key of Object.keys(schema)) delete schema[key];
        schema.anyOf = [copy, { type: "null" }];
      }
    }
  };
  visit(doc);
  return doc;
}

const PROVIDER_DOC_ID = "https://provider.invalid/openapi.json";
const pointerPart = (part: string) => part.replaceAll("~", "~0").replaceAll("/", "~1");

/**
 * Validators for the provider's documented bodies, $refs resolved by ajv against the whole
 * document (after `adjust`, where a caller deliberately differs and says why): `response(method, path, status, contentType)` is null when the provider documents no
 * such body, else a function returning null for a conforming body or the errors.
 */
export function providerValidators(adjust: (doc: Json) => void = () => {}) {
  const doc = providerJsonSchemaDocument();
  adjust(doc);
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  ajv.addSchema(doc, PROVIDER_DOC_ID);
  const response = (method: string, path: string, status: number, contentType = "application/json") => {
    const content = doc.paths[path]?.[method]?.responses?.[String(status)]?.content?.[contentType];
    if (!content?.schema) return null;
    const pointer = ["paths", path, method, "responses", String(status), "content", contentType, "schema"].map(pointerPart).join("/");
    const validate = ajv.getSchema(`${PROVIDER_DOC_ID}#/${pointer}`)!;
    return (body: unknown): string | null => (validate(body) ? null : ajv.errorsText(validate.errors, { separator: "\n  " }));
  };
  return { doc, ajv, response };
}
