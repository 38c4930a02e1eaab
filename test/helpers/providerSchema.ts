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
