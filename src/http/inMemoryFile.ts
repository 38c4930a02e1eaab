import { createHash } from "node:crypto";
import type { Request, Response } from "express";
import { COMPRESSION_THRESHOLD_BYTES, compressBody } from "./compressResponses.js";

/**
 * A response body that never changes while the server runs (the console's files, the OpenAPI
 * document, the API reference's script), kept in memory with its ETag and its gzip and brotli
 * forms, each made once on first use. Serving it reads no file and compresses nothing per
 * request: file reads and compression streams run on libuv's thread pool, which waits behind
 * llama.cpp's decodes on a CPU-only node (bin/libuvPool.cjs).
 */
export class InMemoryFile {
  readonly etag: string;
  private readonly encodings = new Map<"br" | "gzip", Buffer>();

  /** `type`: a Content-Type or a file extension (as `res.type` takes). */
  constructor(
    readonly body: Buffer,
    private readonly type: string,
    private readonly cacheControl?: string,
  ) {
    this.etag = `"${createHash("sha1").update(body).digest("base64url")}"`;
  }

  send(req: Request, res: Response): void {
    res.type(this.type);
    if (this.cacheControl) res.setHeader("Cache-Control", this.cacheControl);
    res.setHeader("ETag", this.etag);
    res.vary("Accept-Encoding");
    if (req.fresh) {
      res.status(304).end();
      return;
    }
    const encoding = this.body.length >= COMPRESSION_THRESHOLD_BYTES ? req.acceptsEncodings("br", "gzip") : false;
    let body = this.body;
    if (encoding === "br" || encoding === "gzip") {
      body = this.encoded(encoding);
      res.setHeader("Content-Encoding", encoding);
    }
    res.setHeader("Content-Length", body.length);
    res.end(req.method === "HEAD" ? undefined : body);
  }

  private encoded(encoding: "br" | "gzip"): Buffer {
    let encoded = this.encodings.get(encoding);
    if (!encoded) {
      encoded = compressBody(this.body, encoding);
      this.encodings.set(encoding, encoded);
    }
    return encoded;
  }
}
