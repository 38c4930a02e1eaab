import { Router, type NextFunction, type Request, type Response } from "express";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { extname, join, sep } from "node:path";
import { PACKAGE_ROOT } from "../config/packageRoot.js";
import { InMemoryFile } from "../http/inMemoryFile.js";

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
 *
 * The files (a few, about 60 KB) are read once, here, and served from memory (InMemoryFile: no
 * file read behind a long prompt's decode on a CPU-only node). A console rebuilt while the server
 * runs is served from its next start.
 */
export function consoleStatic(apiBase: string, dist = CONSOLE_DIST): Router {
  const router = Router();
  const isApi = (req: Request) => req.path === apiBase || req.path.startsWith(`${apiBase}/`);
  if (!existsSync(join(dist, "index.html"))) {
    router.get("/", (_req, res) => {
      res.status(200).type("html").send(MISSING_PAGE);
    });
    return router;
  }
  const files = readConsoleFiles(dist);
  const index = files.get("/index.html")!;
  router.get(/.*/, (req: Request, res: Response, next: NextFunction) => {
    if (isApi(req)) {
      next();
      return;
    }
    const file = files.get(req.path === "/" ? "/index.html" : req.path);
    if (file) {
      file.send(req, res);
      return;
    }
    if (!req.accepts("html") || !(req.get("accept") ?? "").includes("text/html")) {
      next();
      return;
    }
    index.send(req, res);
  });
  return router;
}

/** Every file under `dist`, by its URL path (its Content-Type from its extension). */
function readConsoleFiles(dist: string): Map<string, InMemoryFile> {
  const files = new Map<string, InMemoryFile>();
  for (const name of readdirSync(dist, { recursive: true, encoding: "utf8" })) {
    const path = join(dist, name);
    if (statSync(path).isFile()) files.set(`/${name.split(sep).join("/")}`, new InMemoryFile(readFileSync(path), extname(path), "public, max-age=0"));
  }
  return files;
}
