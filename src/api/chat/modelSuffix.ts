import { InvalidRequestError } from "../../errors.js";
import { SERVICE_PARAMETER_DEFAULTS, ServiceParameters } from "./schema.js";

/** The service_parameters a suffix may set (all of them), with the provider's spelling as an alias. */
const SUFFIX_ALIASES: Record<string, string> = { include_venice_system_prompt: "include_service_system_prompt" };
const SUFFIX_PARAMETERS = Object.keys(ServiceParameters.shape) as (keyof ServiceParameters & string)[];

/**
 * Model feature suffixes: `model` written as `id:parameter=value[&parameter=value...]` sets
 * service_parameters fields, e.g. `qwen3:strip_thinking_response=true&enable_web_search=auto`.
 * A malformed suffix, an unknown parameter or a bad value is a 400 naming it under `model`.
 */
export function parseModelSuffix(model: string): { modelId: string; parameters: ServiceParameters } {
  const colon = model.indexOf(":");
  if (colon < 0) return { modelId: model, parameters: {} };
  const modelId = model.slice(0, colon);
  const suffix = model.slice(colon + 1);
  if (!modelId) throw InvalidRequestError.forField(["model"], "the model id comes before the feature suffix (id:parameter=value)");
  if (!suffix) throw InvalidRequestError.forField(["model"], "a feature suffix follows ':' as parameter=value, joined with '&'");
  const parameters: Record<string, unknown> = {};
  for (const pair of suffix.split("&")) {
    const equals = pair.indexOf("=");
    if (equals <= 0) throw InvalidRequestError.forField(["model"], `feature suffix "${pair}" is not of the form parameter=value`);
    const written = pair.slice(0, equals);
    const name = SUFFIX_ALIASES[written] ?? written;
    const raw = decodeSuffixValue(pair.slice(equals + 1));
    if (!SUFFIX_PARAMETERS.includes(name as keyof ServiceParameters & string)) {
      throw InvalidRequestError.forField(
        ["model", written],
        `unknown feature suffix parameter "${written}"; suffixes set service_parameters fields: ${SUFFIX_PARAMETERS.join(", ")}`,
      );
    }
    const isBoolean = typeof SERVICE_PARAMETER_DEFAULTS[name as keyof typeof SERVICE_PARAMETER_DEFAULTS] === "boolean";
    const value = isBoolean ? ({ true: true, false: false } as Record<string, boolean>)[raw] : raw;
    const parsed = ServiceParameters.shape[name as keyof typeof ServiceParameters.shape].safeParse(value);
    if (value === undefined || !parsed.success) {
      const expected = isBoolean ? "true or false" : (parsed.error?.issues[0]?.message ?? "a valid value");
      throw InvalidRequestError.forField(["model", written], `invalid value "${raw}" for feature suffix parameter "${written}": expected ${expected}`);
    }
    parameters[name] = parsed.data;
  }
  return { modelId, parameters: parameters as ServiceParameters };
}

function decodeSuffixValue(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
