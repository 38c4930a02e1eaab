import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { Router } from "express";
import { PACKAGE_ROOT } from "../../config/packageRoot.js";
import { InMemoryFile } from "../../http/inMemoryFile.js";
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
  // Built now, so a schema that cannot be rendered fails at start-up; it never changes, so it is
  // serialized once (290 KB of JSON) and compressed once per encoding.
  const document = new InMemoryFile(Buffer.from(JSON.stringify(openApiDocument())), "application/json; charset=utf-8");
  const router = Router();
  router.get("/openapi.json", (req, res) => {
    document.send(req, res);
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
 * GET /docs: the interactive API reference (Scalar), with its bundle from node_modules (public),
 * read on its first request (3.5 MB) and then served from memory.
 */
export function docsRouter(): Router {
  const bundlePath = createRequire(import.meta.url).resolve("@scalar/api-reference/browser/standalone.js");
  let bundle: InMemoryFile | undefined;
  const router = Router();
  router.get("/docs", (_req, res) => {
    res.type("html").send(DOCS_PAGE);
  });
  router.get(SCALAR_BUNDLE_PATH, (req, res) => {
    bundle ??= new InMemoryFile(readFileSync(bundlePath), "text/javascript; charset=utf-8", "public, max-age=86400");
    bundle.send(req, res);
  });
  return router;
}
