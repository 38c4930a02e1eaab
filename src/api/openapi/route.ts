import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { brotliCompressSync, constants as zlibConstants, gzipSync } from "node:zlib";
import { Router } from "express";
import { PACKAGE_ROOT } from "../../config/packageRoot.js";
import { API_GROUPS } from "./apiGroups.js";
import { buildOpenApiDocument } from "./buildOpenApiDocument.js";

/** Where the docs page loads Scalar from: served by this node, so /docs works with no internet access. */
export const SCALAR_BUNDLE_PATH = "/docs/scalar.js";

let cached: Record<string, unknown> | undefined;

/** The document, built once per process (the schemas do not change while it runs). */
export function openApiDocument(): Record<string, unknown> {
  if (!cached) {
    const { version } = JSON.parse(readFileSync(join(PACKAGE_ROOT, "package.json"), "utf8")) as { version: string };
    cached = buildOpenApiDocument(API_GROUPS, { version });
  }
  return cached;
}

/** GET /api/v1/openapi.json (public). */
export function openapiRouter(): Router {
  const document = openApiDocument(); // built now, so a schema that cannot be rendered fails at start-up
  const router = Router();
  router.get("/openapi.json", (_req, res) => {
    res.json(document);
  });
  return router;
}

const DOCS_PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>Hearth API reference</title>
  </head>
  <body>
    <div id="app"></div>
    <script src="${SCALAR_BUNDLE_PATH}"></script>
    <script>
      // Nothing from scalar.com: no CDN fonts, request proxy, telemetry, AI agent or share/deploy toolbar (the page must work air-gapped).
      Scalar.createApiReference("#app", {
        url: "/api/v1/openapi.json",
        withDefaultFonts: false,
        proxyUrl: "",
        telemetry: false,
        agent: { disabled: true },
        showDeveloperTools: "never",
      });
    </script>
  </body>
</html>
`;

/**
 * GET /docs: the interactive API reference (Scalar), with its bundle from node_modules (public).
 * The bundle (3.5 MB) is read and compressed on its first request and then served from memory:
 * file reads and compression streams run on libuv's thread pool, which waits behind llama.cpp's
 * decodes on a CPU-only node (bin/libuvPool.cjs), one 64 KB read per decode.
 */
export function docsRouter(): Router {
  const bundlePath = createRequire(import.meta.url).resolve("@scalar/api-reference/browser/standalone.js");
  let bundle: InMemoryFile | undefined;
  const router = Router();
  router.get("/docs", (_req, res) => {
    res.type("html").send(DOCS_PAGE);
  });
  router.get(SCALAR_BUNDLE_PATH, (req, res) => {
    bundle ??= new InMemoryFile(readFileSync(bundlePath));
    const encoding = req.acceptsEncodings("br", "gzip");
    res.setHeader("Content-Type", "text/javascript; charset=utf-8");
    res.setHeader("Cache-Control", "public, max-age=86400");
    res.setHeader("ETag", bundle.etag);
    res.vary("Accept-Encoding");
    if (req.fresh) {
      res.status(304).end();
      return;
    }
    const body = encoding === "br" || encoding === "gzip" ? bundle.encoded(encoding) : bundle.body;
    if (body !== bundle.body) res.setHeader("Content-Encoding", encoding as string);
    res.setHeader("Content-Length", body.length);
    res.end(req.method === "HEAD" ? undefined : body);
  });
  return router;
}

/** A file's bytes with its ETag, and its gzip and brotli forms made on first use. */
class InMemoryFile {
  readonly etag: string;
  private readonly encodings = new Map<"br" | "gzip", Buffer>();

  constructor(readonly body: Buffer) {
    this.etag = `"${createHash("sha1").update(body).digest("base64url")}"`;
  }

  encoded(encoding: "br" | "gzip"): Buffer {
    let encoded = this.encodings.get(encoding);
    if (!encoded) {
      encoded = encoding === "br" ? brotliCompressSync(this.body, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 4 } }) : gzipSync(this.body);
      this.encodings.set(encoding, encoded);
    }
    return encoded;
  }
}
