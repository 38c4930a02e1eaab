import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterEach, beforeEach, expect, it } from "vitest";
import { compileSources } from "../../bin/compile.js";
import { PACKAGE_ROOT } from "../../src/config/packageRoot.js";

/**
 * bin/hearth.js runs src/ compiled into dist/ (no tsx loader in a serving process), brought up
 * to date on every start. These build a small project in a temporary directory and run what
 * comes out, so a stale or missing output shows up as the wrong words printed.
 */
const run = promisify(execFile);
let root: string;

function write(path: string, content: string) {
  mkdirSync(dirname(join(root, path)), { recursive: true });
  writeFileSync(join(root, path), content);
}

async function runCompiled(entry: string) {
  const { stdout } = await run(process.execPath, [fileURLToPath(entry)], { cwd: root });
  return stdout.trim();
}

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "hearth-compile-"));
  write("package.json", JSON.stringify({ type: "module" }));
  write("tsconfig.json", JSON.stringify({ compilerOptions: { target: "ES2023", module: "NodeNext" } }));
  write("src/lib/greet.ts", `export function greet(name: string): string { return "hello " + name; }\n`);
  write(
    "src/cli/main.ts",
    [
      `import type { Server } from "node:http";`,
      `import { greet } from "../lib/greet.js";`,
      `import { shout } from "./shout.mjs";`,
      `class Counter { count = 1; }`,
      `const unused: Server | undefined = undefined;`,
      `console.log(shout(greet("world")), new Counter().count, unused);`,
    ].join("\n"),
  );
  write("src/cli/shout.mjs", `export const shout = (text) => text.toUpperCase();\n`);
  // Browser code is vite's, not the server's: never compiled.
  write("src/console/web/page.ts", `export const page: number = 1;\n`);
});

afterEach(() => rmSync(root, { recursive: true, force: true }));

it("compiles TypeScript and copies JavaScript into dist/, skipping the console's browser code, and the result runs", async () => {
  const entry = await compileSources(root);
  expect(entry).toBe(`file://${join(root, "dist", "src", "cli", "main.js")}`);
  expect(await runCompiled(entry!)).toBe("HELLO WORLD 1 undefined");
  expect(existsSync(join(root, "dist/src/cli/shout.mjs"))).toBe(true);
  expect(existsSync(join(root, "dist/src/console/web/page.js"))).toBe(false);
  // The source map names the TypeScript file, relative to the compiled one.
  const map = JSON.parse(readFileSync(join(root, "dist/src/lib/greet.js.map"), "utf8")) as { sources: string[] };
  expect(resolve(root, "dist/src/lib", map.sources[0]!)).toBe(join(root, "src/lib/greet.ts"));
  expect(readFileSync(join(root, "dist/src/lib/greet.js"), "utf8")).toContain("//# sourceMappingURL=greet.js.map");
});

it("a second start rewrites nothing; an edited file is compiled again and a deleted one leaves dist/", async () => {
  const entry = (await compileSources(root))!;
  const compiledAt = (path: string) => statSync(join(root, "dist/src", path)).mtimeMs;
  const before = { main: compiledAt("cli/main.js"), greet: compiledAt("lib/greet.js") };
  await new Promise((done) => setTimeout(done, 20));

  await compileSources(root);
  expect({ main: compiledAt("cli/main.js"), greet: compiledAt("lib/greet.js") }).toEqual(before);

  write("src/lib/greet.ts", `export function greet(name: string): string { return "goodbye " + name; }\n`);
  await compileSources(root);
  expect(compiledAt("cli/main.js")).toBe(before.main);
  expect(compiledAt("lib/greet.js")).toBeGreaterThan(before.greet);
  expect(await runCompiled(entry)).toBe("GOODBYE WORLD 1 undefined");

  rmSync(join(root, "src/cli/shout.mjs"));
  write("src/cli/main.ts", `import { greet } from "../lib/greet.js";\nconsole.log(greet("again"));\n`);
  await compileSources(root);
  expect(existsSync(join(root, "dist/src/cli/shout.mjs"))).toBe(false);
  expect(await runCompiled(entry)).toBe("goodbye again");
});

it("returns null (the CLI then runs the sources through tsx) when dist/ cannot be written", async () => {
  write("dist", "a file where the directory should be");
  expect(await compileSources(root)).toBeNull();
});

it("the compiled copy of the real sources finds the same package root as the sources themselves", async () => {
  await compileSources();
  const compiled = (await import(join(PACKAGE_ROOT, "dist/src/config/packageRoot.js"))) as { PACKAGE_ROOT: string };
  expect(compiled.PACKAGE_ROOT).toBe(PACKAGE_ROOT);
  expect(existsSync(join(PACKAGE_ROOT, "dist/src/engines/worker/workerBoot.mjs"))).toBe(true);
});

it.runIf(process.platform === "linux")("leaves no esbuild process behind in the server that compiled (neither running nor a zombie)", async () => {
  // In a process of its own: what it has below it once compileSources returns is what a server would carry.
  const probe = [
    `import { readdirSync, readFileSync } from "node:fs";`,
    `const { compileSources } = await import(${JSON.stringify(join(PACKAGE_ROOT, "bin/compile.js"))});`,
    `const entry = await compileSources(${JSON.stringify(root)});`,
    `const childrenNow = () => {`,
    `  const children = [];`,
    `  for (const pid of readdirSync("/proc").filter((name) => /^\\d+$/.test(name))) {`,
    `    let stat; try { stat = readFileSync("/proc/" + pid + "/stat", "utf8"); } catch { continue; }`,
    `    const close = stat.lastIndexOf(")");`,
    `    const [state, ppid] = stat.slice(close + 2).split(" ");`,
    `    if (Number(ppid) === process.pid) children.push(stat.slice(stat.indexOf("(") + 1, close) + " " + state);`,
    `  }`,
    `  return children;`,
    `};`,
    // A stopped child is reaped by the event loop's next turns (it shows as a zombie until then).
    `let children = childrenNow();`,
    `for (let i = 0; i < 100 && children.length > 0; i++) { await new Promise((r) => setTimeout(r, 20)); children = childrenNow(); }`,
    `console.log(JSON.stringify({ compiled: entry !== null, children }));`,
  ].join("\n");
  write("probe.mjs", probe);
  const { stdout } = await run(process.execPath, [join(root, "probe.mjs")], { cwd: root });
  expect(JSON.parse(stdout)).toEqual({ compiled: true, children: [] });
});
