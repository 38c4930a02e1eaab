import { serveWorker } from "../engines/worker/serveWorker.js";
import { checkJsonShape, type JsonShapeLimits, type JsonShapeViolation, scanJsonText } from "./jsonShape.js";

/**
 * Worker-thread side of parsing large JSON bodies (largeJsonBody.ts): the bytes arrive
 * transferred, and are decoded, scanned for the shape's bounds, parsed and checked here, off the
 * event loop. What goes back is the parsed value, or what was wrong with the body.
 */

export interface JsonBodyTask {
  bytes: Uint8Array;
  shape: JsonShapeLimits;
}

export type JsonBodyResult =
  | { kind: "parsed"; value: unknown }
  /** Not JSON, or JSON whose top level is not an object or an array (body-parser's strict mode). */
  | { kind: "malformed"; message: string }
  /** Past the shape's bounds: seen in the text, before parsing (no path), or in the parsed value. */
  | { kind: "too-deep-or-large"; scanned?: string; violation?: JsonShapeViolation };

serveWorker<null, JsonBodyTask>({
  load: async () => ({ context: null }),
  async run(_context, { bytes, shape }) {
    const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const scanned = scanJsonText(buffer, shape);
    if (scanned) return { result: { kind: "too-deep-or-large", scanned } satisfies JsonBodyResult };
    const text = buffer.toString("utf8");
    const first = /\S/.exec(text)?.[0];
    if (first !== "{" && first !== "[")
      return {
        result: {
          kind: "malformed",
          message: `the body's top level must be an object or an array, not ${first === undefined ? "nothing" : `"${first}..."`}`,
        } satisfies JsonBodyResult,
      };
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      return { result: { kind: "malformed", message: (error as Error).message } satisfies JsonBodyResult };
    }
    const violation = checkJsonShape(value, shape);
    if (violation) return { result: { kind: "too-deep-or-large", violation } satisfies JsonBodyResult };
    return { result: { kind: "parsed", value } satisfies JsonBodyResult };
  },
});
