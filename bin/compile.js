// Transpiles src/ into dist/ so that a serving Hearth runs plain JavaScript.
//
// Why not run the sources through tsx, as tests do: tsx's loader hooks run in a second V8
// isolate and keep an inline source map per module, about 70 MB of resident memory that a model
// server pays for nothing (measured: 229 MB idle through tsx, 158 MB from dist/).
// Why not a build step: a build that somebody forgets to rerun serves yesterday's code. So every
// start compares each source file's size and modification time with what dist/ was built from,
// and transpiles only the files that changed (about 1 s for all of them, a few ms for none).
// dist/ is a cache: never edit it, delete it any time.
//
// esbuild's per-file transform is what tsx itself runs, so the output is the same code tests
// exercise. Source maps are written beside each file (not inline) and cost nothing unless asked
// for: `node --enable-source-maps bin/hearth.cjs …` gives stack traces in TypeScript lines.
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const PACKAGE_ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
/** Browser code (built by vite) and its build output are not the server's modules. */
const SKIPPED = [join("console", "web"), join("console", "dist")];
/** Files copied as they are (a worker's boot module, data a module reads beside itself). */
const COPIED = /\.(mjs|cjs|js|json)$/;
/** Bump when the transform's options change: every file is compiled again. */
const FORMAT = 1;

/**
 * Brings dist/ up to date with src/ and returns the URL of the compiled CLI, or null when dist/
 * cannot be written (a read-only install) or esbuild is missing: the caller then runs the
 * sources through tsx.
 */
export async function compileSources(root = PACKAGE_ROOT) {
  let esbuild;
  try {
    esbuild = await import("esbuild");
  } catch {
    return null;
  }
  const sourceDir = join(root, "src");
  const outDir = join(root, "dist", "src");
  const manifestPath = join(root, "dist", "manifest.json");
  try {
    const tsconfig = readFileSync(join(root, "tsconfig.json"), "utf8");
    const key = `${FORMAT}:${esbuild.version}:${tsconfig}`;
    const previous = readManifest(manifestPath, key);
    const next = {};
    const compilerOptions = compilerOptionsOf(tsconfig);
    const compiling = [];
    for (const name of sourceFiles(sourceDir, "")) {
      const source = join(sourceDir, name);
      const stats = statSync(source);
      const stamp = `${stats.size}:${stats.mtimeMs}`;
      next[name] = stamp;
      if (previous[name] === stamp) continue;
      if (name.endsWith(".ts")) compiling.push(compileOne(esbuild, source, join(outDir, outputName(name)), compilerOptions));
      else writeAtomically(join(outDir, name), readFileSync(source));
    }
    await Promise.all(compiling);
    for (const name of Object.keys(previous)) {
      if (next[name]) continue;
      const output = join(outDir, outputName(name));
      rmSync(output, { force: true });
      rmSync(`${output}.map`, { force: true });
    }
    writeAtomically(manifestPath, JSON.stringify({ key, files: next }));
    return pathToFileURL(join(outDir, "cli", "main.js")).href;
  } catch {
    return null;
  } finally {
    // The first transform starts esbuild's service, a child process that would otherwise live as
    // long as the server (about 12 MB after every upgrade). The asynchronous API is used because
    // its child belongs to the main thread: the synchronous one runs it from a worker thread, and
    // stopped, it stayed a zombie, never reaped.
    await esbuild.stop();
  }
}

async function compileOne(esbuild, source, output, compilerOptions) {
  const result = await esbuild.transform(readFileSync(source, "utf8"), {
    loader: "ts",
    format: "esm",
    target: "node20",
    sourcemap: "external",
    // The map names the TypeScript file relative to the compiled one, so it resolves wherever the checkout lives.
    sourcefile: relative(dirname(output), source).split(sep).join("/"),
    tsconfigRaw: { compilerOptions },
  });
  writeAtomically(`${output}.map`, result.map);
  writeAtomically(output, `${result.code}//# sourceMappingURL=${basename(output)}.map\n`);
}

function outputName(name) {
  return name.replace(/\.ts$/, ".js");
}

/** Paths relative to `sourceDir` of the files to compile or copy. */
function* sourceFiles(sourceDir, under) {
  if (SKIPPED.includes(under)) return;
  for (const entry of readdirSync(join(sourceDir, under), { withFileTypes: true })) {
    const name = join(under, entry.name);
    if (entry.isDirectory()) yield* sourceFiles(sourceDir, name);
    else if (entry.name.endsWith(".ts") ? !entry.name.endsWith(".d.ts") : COPIED.test(entry.name)) yield name;
  }
}

function readManifest(manifestPath, key) {
  try {
    const manifest = JSON.parse(readFileSync(manifestPath, "utf8"));
    return manifest.key === key ? manifest.files : {};
  } catch {
    return {};
  }
}

/** The options esbuild honours (class fields, import elision) as tsx would read them. */
function compilerOptionsOf(tsconfig) {
  try {
    return JSON.parse(tsconfig).compilerOptions ?? {};
  } catch {
    return {};
  }
}

/** Starts racing each other (tests spawn many CLIs at once) never read a half-written file. */
function writeAtomically(path, content) {
  mkdirSync(dirname(path), { recursive: true });
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, content);
  renameSync(temporary, path);
}

// `node bin/compile.js` (npm's postinstall) compiles ahead of the first start, so an install
// that is read-only afterwards still runs compiled.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  if (!(await compileSources())) console.warn("hearth: could not compile src/ into dist/; the CLI will run the sources through tsx");
}
