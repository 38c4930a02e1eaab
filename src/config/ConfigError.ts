import type { z } from "zod";

/** A setting, the model registry or the wallet config is wrong: start-up stops with the offending field named. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/** One line per zod issue: `<source>: <path>: <message>`. */
export function describeIssues(source: string, error: z.ZodError): string {
  return error.issues.map((issue) => `${source}: ${issue.path.join(".") || "(root)"}: ${issue.message}`).join("\n");
}
