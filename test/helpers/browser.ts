import { existsSync } from "node:fs";
import { arch, platform } from "node:os";
import { chromium, type Browser } from "playwright-core";

/**
 * Finding a Chromium for the browser tests with nothing installed by hand:
 * 1. `HEARTH_CHROMIUM`, when set (a binary the user chose);
 * 2. on Linux x64, `@sparticuz/chromium`, a dev dependency that carries a headless Chromium
 *    inside its own npm tarball (inflated to the temp directory on first use, no download);
 * 3. the system's browser (Debian's `chromium`, or Chrome).
 * A browser that is found is also started once, so a binary that cannot run here (missing
 * system libraries, another platform) counts as no browser, with the reason.
 *
 * `HEARTH_REQUIRE_BROWSER=1` (set by .ci/run) turns "no browser" from a skip into a failure.
 */

/** Flags for a root user in a sandboxed machine with no network: no sandbox, no background traffic. */
const LAUNCH_ARGS = [
  "--no-sandbox",
  "--no-zygote",
  "--disable-gpu",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-quic",
];

const SYSTEM_BROWSERS = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome", "/usr/bin/google-chrome-stable"];

export type BrowserProbe = { executablePath: string; source: string } | { executablePath: null; reason: string };

export const browserRequired = () => process.env.HEARTH_REQUIRE_BROWSER === "1";

async function candidates(): Promise<{ path: string; source: string }[] | string> {
  const chosen = process.env.HEARTH_CHROMIUM;
  if (chosen) return existsSync(chosen) ? [{ path: chosen, source: "HEARTH_CHROMIUM" }] : `HEARTH_CHROMIUM=${chosen} does not exist`;
  const found: { path: string; source: string }[] = [];
  if (platform() === "linux" && arch() === "x64") {
    try {
      const bundled = (await import("@sparticuz/chromium")).default;
      found.push({ path: await bundled.executablePath(), source: "@sparticuz/chromium" });
    } catch {
      // Not installed (optional use) or not inflatable here: fall through to the system's browser.
    }
  }
  for (const path of SYSTEM_BROWSERS) if (existsSync(path)) found.push({ path, source: "system" });
  return found;
}

/** The first browser that starts here, or why there is none. */
export async function probeBrowser(): Promise<BrowserProbe> {
  const found = await candidates();
  if (typeof found === "string") return { executablePath: null, reason: found };
  const failures: string[] = [];
  for (const { path, source } of found) {
    try {
      const browser = await chromium.launch({ executablePath: path, args: LAUNCH_ARGS, timeout: 30_000 });
      await browser.close();
      return { executablePath: path, source };
    } catch (error) {
      failures.push(`${path} (${source}) did not start: ${(error as Error).message.split("\n")[0]}`);
    }
  }
  const tried = failures.length ? failures.join("; ") : `no Chromium found (${platform()}-${arch()} has no bundled one)`;
  return { executablePath: null, reason: tried };
}

export function launchBrowser(executablePath: string): Promise<Browser> {
  return chromium.launch({ executablePath, args: LAUNCH_ARGS });
}

/** The one line a skipped browser suite prints: why, and what to install. */
export const skipLine = (reason: string) =>
  `browser tests skipped: ${reason}. On Linux x64 \`npm install\` brings one (@sparticuz/chromium); elsewhere install Chromium (e.g. \`apt-get install chromium\`) or set HEARTH_CHROMIUM to a Chromium binary.`;
