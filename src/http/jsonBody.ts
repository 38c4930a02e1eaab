import express, { type NextFunction, type Request, type RequestHandler, type Response } from "express";
import { InvalidRequestError, PayloadTooLargeError } from "../errors.js";
import { formatBytes } from "./formatBodyBytes.js";
import type { BodyBudget } from "./bodyBudget.js";
import { checkJsonShape, type JsonShapeLimits, scanJsonText } from "./jsonShape.js";
import { parseLargeJsonBody, parsesOffThread } from "./largeJsonBody.js";

/**
 * Every JSON body, whatever the route: nesting, value count and string characters bounded,
 * checked without recursion right after parsing, so no later code (validation, a schema
 * compiler) can overflow the stack or walk an unbounded tree. Fields with tighter limits of
 * their own (a response schema, tool parameters) are checked again where they are read.
 */
export const BODY_SHAPE: JsonShapeLimits = { maxDepth: 128, maxNodes: 200_000, maxChars: Number.POSITIVE_INFINITY };

/** Free-form fields a too-deep body is reported against (their own path, not the node deep inside). */
const FREE_FORM_FIELDS: readonly (readonly string[])[] = [
  ["response_format", "json_schema", "schema"],
  ["response_format", "json_schema"],
  ["tools", "*", "function", "parameters"],
  ["metadata"],
];

/**
 * The JSON body parser of every route, its size limit chosen per route (`limitOf` gets
 * "METHOD /route/path" as the route was declared): past it, a 413 that names the limit,
 * before the body is read when Content-Length announces it. A body is read once the body
 * budget admits it (429 or 503 before reading it otherwise). A body announced at 1 MB or more
 * is parsed on a worker thread (largeJsonBody.ts), with the same checks and answers.
 */
export function jsonBodyByRoute(limitOf: (route: string) => number, budget: BodyBudget, shape: JsonShapeLimits = BODY_SHAPE): RequestHandler {
  const parsers = new Map<number, RequestHandler>();
  return (req: Request, res: Response, next: NextFunction) => {
    const route = `${req.method} ${typeof req.route?.path === "string" ? req.route.path : req.path}`;
    const limit = limitOf(route);
    const refusal = req.is("application/json") ? budget.admit(req, res, limit) : undefined;
    if (refusal) {
      next(refusal);
      return;
    }
    if (req.is("application/json") && parsesOffThread(req)) {
      parseLargeJsonBody(req, limit, shape).then(
        (result) => {
          if (result.kind === "parsed") {
            req.body = result.value;
            // What body-parser marks a body read with.
            (req as { _body?: boolean })._body = true;
            next();
          } else if (result.kind === "malformed") next(Object.assign(new SyntaxError(result.message), { status: 400, type: "entity.parse.failed" }));
          else if (result.violation) next(InvalidRequestError.forField(fieldOf(result.violation.path), `the request body ${result.violation.message}`));
          else next(new InvalidRequestError(`the request body ${result.scanned}`, { _errors: [`the request body ${result.scanned}`] }));
        },
        (error: { type?: string }) => next(error?.type === "entity.too.large" ? tooLarge(route, limit) : error),
      );
      return;
    }
    let parser = parsers.get(limit);
    if (!parser) parsers.set(limit, (parser = express.json({ limit, type: "application/json", verify: scanLargeBody(shape) })));
    parser(req, res, (error?: unknown) => {
      if ((error as { type?: string } | undefined)?.type === "entity.too.large") {
        next(tooLarge(route, limit));
        return;
      }
      const scanned = (error as { shapeViolation?: string } | undefined)?.shapeViolation;
      if (scanned) {
        next(new InvalidRequestError(`the request body ${scanned}`, { _errors: [`the request body ${scanned}`] }));
        return;
      }
      if (error) {
        next(error);
        return;
      }
      // A route that also takes uploads reads them first (multipartBodyParser): its body is then the upload's
      // bytes, not JSON, and walking a Buffer as a JSON object would count each byte as a value.
      if (Buffer.isBuffer(req.body)) {
        next();
        return;
      }
      const violation = checkJsonShape(req.body, shape);
      if (!violation) {
        next();
        return;
      }
      next(InvalidRequestError.forField(fieldOf(violation.path), `the request body ${violation.message}`));
    });
  };
}

function tooLarge(route: string, limit: number): PayloadTooLargeError {
  return new PayloadTooLargeError(`Request body is too large: ${route} accepts at most ${formatBytes(limit)} (${limit} bytes)`);
}

/** Bodies from this size on are scanned before they are parsed (smaller ones parse in a few milliseconds, and keep exact paths). */
const SCAN_FROM_BYTES = 1024 * 1024;

/**
 * body-parser's hook on the raw bytes: a large body past the shape's bounds is refused unparsed.
 * UTF-8 only, where a byte below 0x80 is always that character (body-parser also takes UTF-16,
 * whose characters may hold a quote's or a comma's byte).
 */
function scanLargeBody(shape: JsonShapeLimits): (req: Request, res: Response, buf: Buffer, encoding: string) => void {
  return (_req, _res, buf, encoding) => {
    if (buf.length < SCAN_FROM_BYTES || !/^utf-?8$/i.test(encoding ?? "")) return;
    const violation = scanJsonText(buf, shape);
    if (violation) throw Object.assign(new Error(violation), { shapeViolation: violation });
  };
}

/** The free-form field a path runs through, else the path's first four steps. */
function fieldOf(path: readonly (string | number)[]): (string | number)[] {
  for (const field of FREE_FORM_FIELDS) {
    if (field.length <= path.length && field.every((step, i) => step === "*" || step === path[i])) return path.slice(0, field.length);
  }
  return path.slice(0, 4);
}
