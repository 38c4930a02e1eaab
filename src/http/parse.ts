import type { Request } from "express";
import type { z } from "zod";
import { UnsupportedMediaTypeError, ValidationError } from "../errors.js";

/** Validates data against an endpoint's schema; a failure is a 400 with the zod issue tree. */
export function parse<T extends z.ZodType>(schema: T, data: unknown): z.infer<T> {
  const result = schema.safeParse(data);
  if (!result.success) throw new ValidationError(result.error);
  return result.data;
}

/** JSON endpoints answer 415 to any other content type (before the body is looked at). */
export function requireJson(req: Request): void {
  if (!req.is("application/json")) throw new UnsupportedMediaTypeError("application/json");
}
