import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
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

/** GET /docs: the interactive API reference (Scalar), with its bundle served from node_modules (public). */
export function docsRouter(): Router {
  const bundle = createRequire(import.meta.url).resolve("@scalar/api-reference/browser/standalone.js");
  const router = Router();
  router.get("/docs", (_req, res) => {
    res.type("html").send(DOCS_PAGE);
  });
  router.get(SCALAR_BUNDLE_PATH, (_req, res, next) => {
    res.sendFile(bundle, { maxAge: "1d", headers: { "Content-Type": "text/javascript; charset=utf-8" } }, (error) => {
      if (error) next(error);
    });
  });
  return router;
}
