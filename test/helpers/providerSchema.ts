import { readFileSync } from "node:fs";
import { Ajv2020 } from "ajv/dist/2020.js";
import { parse as parseYaml } from "yaml";

/** The provider's OpenAPI document, the reference the wire shapes are checked against. */
export const PROVIDER_OPENAPI_PATH = "/work/shared/reference/provider-openapi.yaml";

type Json = Record<string, any>;

/**
 * A validator for one of the provider's component schemas. `adjust` may widen a copy of the
 * schema where the node deliberately follows the standard instead (each caller says why).
 */
export function providerSchemaValidator(name: string, adjust: (schema: Json) => void = () => {}) {
  const doc = parseYaml(readFileSync(PROVIDER_OPENAPI_PATH, "utf8")) as Json;
  const schema = structuredClone(doc.components.schemas[name]) as Json;
  if (!schema) throw new Error(`the provider's document has no schema ${name}`);
  adjust(schema);
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  const validate = ajv.compile(schema);
  return (body: unknown): string | null => (validate(body) ? null : `${name}: ${ajv.errorsText(validate.errors)}`);
}
