import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ModelEntry } from "../../src/config/modelRegistry.js";
import { browserRequired, launchBrowser, probeBrowser, skipLine } from "../helpers/browser.js";
import { post, startTestServer, tinyChatEntry, type TestServer } from "../helpers/testServer.js";

/**
 * The console's Models page shows an upstream pool's replicas: a gateway whose model is a pool of
 * a closed port and a real Hearth node, after one request found the first replica down.
 */
const probe = await probeBrowser();
if (probe.executablePath === null) {
  if (browserRequired()) throw new Error(`HEARTH_REQUIRE_BROWSER=1 but no browser can run: ${probe.reason}`);
  console.warn(skipLine(probe.reason));
}

let node: TestServer;
let gateway: TestServer;
let browser: Browser | undefined;
const DEAD = "http://127.0.0.1:9/api/v1";

beforeAll(async () => {
  node = await startTestServer({ models: [tinyChatEntry()] });
  const { key } = node.createKey({ usd: 1 });
  const pool = ModelEntry.parse({
    id: "pool-chat",
    type: "text",
    backend: "upstream",
    upstream: { model: "tiny-chat", contextSize: 2048, replicas: [{ baseUrl: DEAD }, { baseUrl: node.baseUrl, apiKey: key, weight: 2, maxInFlight: 4 }] },
  });
  gateway = await startTestServer({ models: [pool] });
});

afterAll(async () => {
  await browser?.close();
  await gateway?.stop();
  await node?.stop();
});

describe.skipIf(probe.executablePath === null)("the console's Models page with an upstream pool", () => {
  it("lists each replica with its health, weight, load and counts", async () => {
    const res = await post(gateway, "/chat/completions", { model: "pool-chat", messages: [{ role: "user", content: "Hi" }], max_tokens: 2 });
    expect(res.status).toBe(200);

    browser = await launchBrowser(probe.executablePath!);
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(error.message));
    await page.goto(gateway.url);
    await page.fill("input[name=key]", gateway.adminKey);
    await page.click("button[type=submit]");
    await page.waitForSelector("#replicas");
    const dead = page.locator(`#replicas tr[data-replica="${DEAD}"]`);
    const live = page.locator(`#replicas tr[data-replica="${node.baseUrl}"]`);
    expect(await dead.locator("[data-healthy]").getAttribute("data-healthy")).toBe("false");
    expect(await dead.textContent()).toContain("ejected");
    expect(await dead.textContent()).toContain("back-off until");
    expect(await live.locator("[data-healthy]").getAttribute("data-healthy")).toBe("true");
    const cells = await live.locator("td").allTextContents();
    // Model, replica, health, weight, in flight / max, requests, errors, latency.
    expect(cells.slice(0, 7)).toEqual(["pool-chat", node.baseUrl, "healthy", "2", "0 / 4", "1", "0"]);
    expect(cells[7]).toMatch(/^\d+ ms$/);
    expect(errors).toEqual([]);
  });
});
