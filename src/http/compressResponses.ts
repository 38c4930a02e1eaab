import compression from "compression";
import type { Request, RequestHandler, Response } from "express";

/** Below this many bytes a response goes out as is: compressing it saves less than it costs. */
export const COMPRESSION_THRESHOLD_BYTES = 1024;

/**
 * gzip or br (Accept-Encoding) for whole responses only. A compressor buffers until it has a
 * block worth emitting, so server-sent events and audio streams are never compressed: their
 * chunks must leave the moment they exist (they also carry Cache-Control: no-transform, which
 * the package honours too). Audio is compressed already where it matters.
 */
export function compressResponses(): RequestHandler {
  return compression({
    threshold: COMPRESSION_THRESHOLD_BYTES,
    filter: (req: Request, res: Response) => {
      const type = String(res.getHeader("Content-Type") ?? "").toLowerCase();
      if (type.startsWith("text/event-stream") || type.startsWith("audio/")) return false;
      return compression.filter(req, res);
    },
  }) as RequestHandler;
}
