import express, { Router, type NextFunction, type Request, type Response } from "express";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { PACKAGE_ROOT } from "../config/packageRoot.js";

/** The prebuilt console (committed; `npm run build:console` rebuilds it). */
export const CONSOLE_DIST = join(PACKAGE_ROOT, "src", "console", "dist");

const MISSING_PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Hearth</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 4rem auto; line-height: 1.5">
<h1>Hearth is running</h1>
<p>The web console has not been built in this checkout (<code>src/console/dist</code> is missing).
Build it with:</p><pre>npm run build:console</pre>
<p>The API is served under <code>/api/v1</code>.</p></body></html>`;

/**
 * Serves the web console at `/`: its files, and index.html for any other browser navigation
 * (GET with Accept: text/html) so client-side routes survive a reload. Nothing under `apiBase`
 * is touched: API paths keep their JSON 404s.
 */
export function consoleStatic(apiBase: string, dist = CONSOLE_DIST): Router {
  const router = Router();
  const isApi = (req: Request) => req.path === apiBase || req.path.startsWith(`${apiBase}/`);
  const index = join(dist, "index.html");
  if (!existsSync(index)) {
    router.get("/", (_req, res) => {
      res.status(200).type("html").send(MISSING_PAGE);
    });
    return router;
  }
  const files = express.static(dist, { index: "index.html", maxAge: 0, fallthrough: true });
  router.use((req: Request, res: Response, next: NextFunction) => (isApi(req) ? next() : files(req, res, next)));
  router.get(/.*/, (req: Request, res: Response, next: NextFunction) => {
    if (isApi(req) || !req.accepts("html") || !(req.get("accept") ?? "").includes("text/html")) {
      next();
      return;
    }
    res.sendFile(index);
  });
  return router;
}
