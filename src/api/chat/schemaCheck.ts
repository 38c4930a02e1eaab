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
