import compression from "compression";
import type { NextFunction, Request, RequestHandler, Response } from "express";
import { brotliCompressSync, constants as zlibConstants, gzipSync } from "node:zlib";

/** Below this many bytes a response goes out as is: compressing it saves less than it costs. */
export const COMPRESSION_THRESHOLD_BYTES = 1024;

/**
 * Whole bodies up to this size are compressed on the main thread, in one call (290 KB of JSON
 * takes 3.7 ms of gzip and 2.9 ms of brotli on the 2-core machine): a burst of large answers then
 * holds the event loop a few milliseconds each. Larger ones and streamed bodies go through zlib's
 * streams on libuv's pool; what never changes (the OpenAPI document, the console, the API
 * reference's script) is compressed once (InMemoryFile).
 */
export const INLINE_COMPRESSION_MAX_BYTES = 256 * 1024;

/** brotli's quality for responses: the compression package's choice, balanced for speed. */
const BROTLI_QUALITY = 4;

/** A whole body in one call: gzip at zlib's default level, or brotli at BROTLI_QUALITY. */
export function compressBody(body: Buffer, encoding: "br" | "gzip"): Buffer {
  if (encoding === "gzip") return gzipSync(body);
  return brotliCompressSync(body, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY, [zlibConstants.BROTLI_PARAM_SIZE_HINT]: body.length } });
}

function compressible(req: Request, res: Response): boolean {
  const type = String(res.getHeader("Content-Type") ?? "").toLowerCase();
  if (type.startsWith("text/event-stream") || type.startsWith("audio/")) return false;
  return compression.filter(req, res);
}

/**
 * gzip or br (Accept-Encoding) for whole responses only. A compressor buffers until it has a
 * block worth emitting, so server-sent events and audio streams are never compressed: their
 * chunks must leave the moment they exist (they also carry Cache-Control: no-transform, which
 * is honoured too). Audio is compressed already where it matters.
 *
 * A body sent in one piece (every JSON answer) is compressed right away on the main thread.
 * zlib's streams would run on libuv's thread pool, which node-llama-cpp's decodes share: on a
 * CPU-only node the pool has one thread (bin/libuvPool.cjs), and a streamed compression waited
 * behind each llama.cpp call, up to seconds per chunk while a long prompt was read
 * (docs/bench.md). Streamed bodies (files) and larger ones still take the streams.
 */
export function compressResponses(): RequestHandler {
  const streamed = compression({ threshold: COMPRESSION_THRESHOLD_BYTES, filter: compressible }) as RequestHandler;
  return (req, res, next) => {
    streamed(req, res, (error?: unknown) => {
      if (error) next(error);
      else compressWholeBodies(req, res, next);
    });
  };
}

/** Wraps `res.end` (the streaming compressor's) so that a body sent in one piece is compressed in one call. */
function compressWholeBodies(req: Request, res: Response, next: NextFunction): void {
  const encoding = req.acceptsEncodings("br", "gzip");
  if (encoding !== "br" && encoding !== "gzip") {
    next();
    return;
  }
  const end = res.end;
  const write = res.write;
  let wrote = false;
  res.write = function (this: Response, ...args: unknown[]) {
    wrote = true;
    return (write as (...a: unknown[]) => boolean).apply(this, args);
  } as Response["write"];
  res.end = function (this: Response, ...args: unknown[]) {
    const [chunk, chunkEncoding] = args;
    if (!wrote && !res.headersSent && (typeof chunk === "string" || Buffer.isBuffer(chunk))) {
      const body = typeof chunk === "string" ? Buffer.from(chunk, typeof chunkEncoding === "string" ? (chunkEncoding as BufferEncoding) : "utf8") : chunk;
      if (inlineCompressible(req, res, body.length)) {
        const compressed = compressBody(body, encoding);
        res.vary("Accept-Encoding");
        res.setHeader("Content-Encoding", encoding);
        res.setHeader("Content-Length", compressed.length);
        const callback = args.find((a) => typeof a === "function");
        return (end as (...a: unknown[]) => Response).call(this, compressed, ...(callback ? [callback] : []));
      }
    }
    return (end as (...a: unknown[]) => Response).apply(this, args);
  } as Response["end"];
  next();
}

function inlineCompressible(req: Request, res: Response, bytes: number): boolean {
  if (bytes < COMPRESSION_THRESHOLD_BYTES || bytes > INLINE_COMPRESSION_MAX_BYTES) return false;
  if (req.method === "HEAD" || res.statusCode === 204 || res.statusCode === 304) return false;
  if (res.getHeader("Content-Encoding") !== undefined) return false;
  if (/(?:^|,)\s*no-transform\s*(?:,|$)/i.test(String(res.getHeader("Cache-Control") ?? ""))) return false;
  return compressible(req, res);
}
