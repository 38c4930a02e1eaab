import { mkdirSync, readdirSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { browserRequired, launchBrowser, probeBrowser, skipLine } from "../helpers/browser.js";
import { tinyImageEntry } from "../helpers/mediaModels.js";
import { startTestServer, tinyChatEntry, tinyKokoroEntry, type TestServer } from "../helpers/testServer.js";

/**
 * The web console in a real headless Chromium against a real Hearth: log in, manage keys,
 * watch the live view, use the playground, grant credits, read the usage charts. Any browser
 * console error or page error fails the run. Screenshots of each page go to HEARTH_SCREENSHOTS
 * (default test-results/screenshots, ignored by git; `npm run screenshots` refreshes the committed
 * set in docs/screenshots that the README links to, so a test run never edits tracked files).
 */

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const probe = await probeBrowser();
if (probe.executablePath === null) {
  if (browserRequired()) throw new Error(`HEARTH_REQUIRE_BROWSER=1 but no browser can run: ${probe.reason}`);
  console.warn(skipLine(probe.reason));
}
const noBrowser = probe.executablePath === null;
const shots = process.env.HEARTH_SCREENSHOTS ?? join(root, "test-results", "screenshots");

let server: TestServer;
let browser: Browser;
let page: Page;
let stopped = false;
const browserErrors: string[] = [];
const runStarted = Date.now();

function watch(p: Page, label: string): Page {
  p.on("console", (message) => {
    if (message.type() === "error") browserErrors.push(`${label} console: ${message.text()}`);
  });
  p.on("pageerror", (error) => browserErrors.push(`${label} page error: ${error.message}`));
  return p;
}

async function newPage(label: string): Promise<Page> {
  return watch(await browser.newPage({ viewport: { width: 1280, height: 800 } }), label);
}

async function login(p: Page): Promise<void> {
  await p.goto(server.url);
  await p.fill("input[name=key]", server.adminKey);
  await p.click("button[type=submit]");
  await p.waitForSelector("nav a[data-page=models]");
}

const screenshot = (p: Page, name: string) => p.screenshot({ path: join(shots, `${name}.png`), fullPage: true });

beforeAll(async () => {
  server = await startTestServer({
    models: [
      // Greedy by default: the playground's reply must not depend on a random model's random draw (an end of text first).
      tinyChatEntry({ pricing: { input: { usd: 100, diem: 100 }, output: { usd: 200, diem: 200 } }, constraints: { temperature: { default: 0 } } }),
      tinyKokoroEntry(),
      tinyImageEntry({ image: { defaultWidth: 64, defaultHeight: 64, defaultSteps: 2 } }),
    ],
  });
});

afterAll(async () => {
  await browser?.close();
  if (!stopped) await server?.stop();
});

describe.skipIf(noBrowser)("web console", () => {
  beforeAll(async () => {
    mkdirSync(shots, { recursive: true });
    browser = await launchBrowser(probe.executablePath!);
    page = await newPage("main");
  });

  it("serves the console at / without shadowing the API", async () => {
    const html = await fetch(`${server.url}/`, { headers: { accept: "text/html" } });
    expect(html.status).toBe(200);
    const index = await html.text();
    expect(index).toContain('<div id="app">');
    // A client-side route reloaded in the browser gets the app too.
    const deep = await fetch(`${server.url}/some/page`, { headers: { accept: "text/html" } });
    expect(await deep.text()).toBe(index);
    const asset = /src="(\/assets\/[^"]+\.js)"/.exec(index)![1]!;
    const js = await fetch(`${server.url}${asset}`);
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toMatch(/javascript/);
    // API paths keep their JSON errors, even for a browser.
    const api = await fetch(`${server.baseUrl}/no-such-thing`, { headers: { accept: "text/html" } });
    expect(api.status).toBe(404);
    expect(((await api.json()) as { error: string }).error).toMatch(/No route/);
    // No external resources: index.html references nothing on another origin (the browser tests below fail on any failed load).
    expect(index).not.toMatch(/https?:\/\//);
  });

  it("logs in with an admin key kept in sessionStorage, and the live view connects", async () => {
    await page.goto(server.url);
    await page.fill("input[name=key]", server.adminKey);
    await screenshot(page, "login");
    await page.click("button[type=submit]");
    await page.waitForSelector("nav a[data-page=models]");
    expect(await page.evaluate("sessionStorage.getItem('hearth.adminKey')")).toBe(server.adminKey);
    await page.waitForSelector("[data-live=live]");
  });

  it("creates a key, shows its secret once, and revokes it", async () => {
    await page.click("nav a[data-page=keys]");
    await page.waitForSelector("#keys");
    await page.fill("#create-key input[name=description]", "browser test key");
    await page.fill("#create-key input[name=usd]", "2.5");
    await page.click("#create-key button[type=submit]");
    const secret = (await page.textContent("#new-secret code"))!.trim();
    expect(secret).toMatch(/^hth_[\w-]{20,}$/);
    const row = page.locator("#keys tr", { hasText: "browser test key" });
    await row.waitFor();
    expect(await row.textContent()).toContain(`…${secret.slice(-6)}`);
    expect(await row.textContent()).toContain("$2.5 / epoch");
    await screenshot(page, "keys");
    const keyId = await row.getAttribute("data-key-id");
    // The secret is a working key...
    const probe = () => fetch(`${server.baseUrl}/api_keys/rate_limits`, { headers: { authorization: `Bearer ${secret}` } });
    expect((await probe()).status).toBe(200);
    await row.locator("button", { hasText: "Revoke" }).click();
    await row.locator("button", { hasText: "Confirm revoke" }).click();
    await page.locator(`#keys tr[data-key-id="${keyId}"]`).waitFor({ state: "detached" });
    // ...until it is revoked; and the secret is not shown again.
    expect((await probe()).status).toBe(401);
    expect(await page.locator("#new-secret").count()).toBe(0);
  });

  it("shows an account admin its own account only: no node-wide pages, the operator's key marked and out of reach", async () => {
    const own = await newPage("account-admin");
    // An admin key the operator made through the API: an account admin of the operator's account.
    const made = await fetch(`${server.baseUrl}/api_keys`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.adminKey}`, "content-type": "application/json" },
      body: JSON.stringify({ apiKeyType: "ADMIN", description: "colleague" }),
    });
    const colleague = ((await made.json()) as { data: { apiKey: string } }).data.apiKey;
    await own.goto(server.url);
    await own.fill("input[name=key]", colleague);
    await own.click("button[type=submit]");
    await own.waitForSelector("#keys [data-key-type=operator]");
    expect(await own.locator("nav a").evaluateAll((links) => links.map((a) => a.getAttribute("data-page")))).toEqual(["keys", "playground"]);
    expect(await own.locator("[data-live]").count()).toBe(0);
    expect(await own.locator("[data-role=account-admin]").count()).toBe(1);
    const operatorRow = own.locator("#keys tr", { has: own.locator("[data-key-type=operator]") });
    expect(await operatorRow.locator("button", { hasText: "Revoke" }).count()).toBe(0);
    const colleagueRow = own.locator("#keys tr", { hasText: "colleague" });
    expect(await colleagueRow.locator("[data-key-type]").textContent()).toBe("admin");
    await screenshot(own, "keys-account-admin");
    await own.close();
  });

  it("streams a chat reply in the playground while another tab's models page turns the model to loaded live", async () => {
    const models = await newPage("models");
    await login(models);
    const state = models.locator("[data-model=tiny-chat] [data-state]");
    expect(await state.getAttribute("data-state")).toBe("unloaded");

    const streams: string[] = [];
    page.on("response", (response) => {
      if (response.url().endsWith("/api/v1/chat/completions")) streams.push(response.headers()["content-type"] ?? "");
    });
    await page.click("nav a[data-page=playground]");
    await page.waitForSelector("#chat-form");
    await page.fill("#chat-form input[name=prompt]", "Tell me a story about a fox.");
    // Record the reply's length at every DOM change while it streams in.
    // (Browser code as strings: the test project's type library has no DOM.)
    await page.evaluate(`
      window.replyLengths = [];
      new MutationObserver(() => {
        const text = document.querySelector(".message[data-role=assistant]")?.textContent ?? "";
        if (text !== "…") window.replyLengths.push(text.length);
      }).observe(document.querySelector("#messages"), { childList: true, subtree: true, characterData: true });
    `);
    await page.click("#chat-form button[type=submit]");
    await page.waitForSelector("#chat-stats[data-done=true]", { timeout: 30_000 });
    const reply = page.locator(".message[data-role=assistant]");
    const final = (await reply.textContent())!.trim();
    expect(final.length).toBeGreaterThan(0);
    expect(streams).toEqual([expect.stringMatching(/^text\/event-stream/)]);
    // Many SSE chunks were parsed one by one, not one JSON body.
    expect(Number(await page.getAttribute("#chat-stats", "data-chunks"))).toBeGreaterThan(1);
    // The reply grew on screen: it showed partial texts before the whole one.
    const lengths = (await page.evaluate("window.replyLengths")) as number[];
    const partial = new Set(lengths.filter((n) => n > 0 && n < final.length));
    expect(partial.size).toBeGreaterThanOrEqual(2);
    expect(lengths).toEqual([...lengths].sort((a, b) => a - b));
    await screenshot(page, "playground-chat");

    // The other tab never reloaded: the live view pushed the change.
    await models.locator("[data-model=tiny-chat] [data-state=loaded]").waitFor({ timeout: 5000 });
    const request = models.locator("#requests tr", { hasText: "/api/v1/chat/completions" });
    await request.first().waitFor({ timeout: 5000 });
    expect(await request.first().textContent()).toMatch(/POST.*tiny-chat.*200/);
    // The live view's request list never carries a key.
    expect(await models.content()).not.toContain(server.adminKey);
    // The budget line: what the loaded models use (no budget set on this node).
    expect(await models.locator("#budget").textContent()).toMatch(/RAM [\d.]+ MiB of no budget/);
    await screenshot(models, "models");

    // Unload and load by hand: the buttons call the admin endpoints, the live view shows the result.
    const row = models.locator("[data-model=tiny-chat]");
    await row.getByRole("button", { name: "Unload" }).click();
    await models.locator("[data-model=tiny-chat] [data-state=unloaded]").waitFor({ timeout: 5000 });
    expect(server.models.statusOf("tiny-chat").state).toBe("unloaded");
    await row.getByRole("button", { name: "Load" }).click();
    await models.locator("[data-model=tiny-chat] [data-state=loaded]").waitFor({ timeout: 15_000 });
    expect(server.models.statusOf("tiny-chat").state).toBe("loaded");
    await models.close();
  });

  it("plays generated speech in an <audio> element", async () => {
    await page.click("button[data-tab=speech]");
    await page.click("#speech-form button[type=submit]");
    await page.waitForSelector("#speech-audio");
    const duration = (await page.evaluate(`new Promise((resolve) => {
      const audio = document.querySelector("#speech-audio");
      if (audio.readyState >= 1) resolve(audio.duration);
      else audio.addEventListener("loadedmetadata", () => resolve(audio.duration), { once: true });
    })`)) as number;
    expect(duration).toBeGreaterThan(0);
    await screenshot(page, "playground-speech");
  });

  it("shows a generated image as an <img>", async () => {
    await page.click("button[data-tab=images]");
    await page.click("#image-form button[type=submit]");
    const image = page.locator("#generated-image");
    await image.waitFor({ timeout: 30_000 });
    await page.waitForFunction(`(document.querySelector("#generated-image")?.naturalWidth ?? 0) > 0`);
    expect(await image.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth)).toBe(64);
    await screenshot(page, "playground-image");
  });

  it("lists accounts with balances and grants credit", async () => {
    await page.click("nav a[data-page=accounts]");
    const row = page.locator("#accounts tr[data-account]").first();
    await row.waitFor();
    const accountId = await row.getAttribute("data-account");
    const before = Number(await row.locator("[data-usd]").textContent());
    expect(before).toBeGreaterThan(0);
    expect(before).toBeLessThan(100); // the chat above was charged
    await page.selectOption("#grant select[name=account]", accountId!);
    await page.fill("#grant input[name=amount]", "5");
    await page.fill("#grant input[name=note]", "console test");
    await page.click("#grant button[type=submit]");
    await page.waitForSelector("#grant ~ .ok");
    const after = Number(await page.locator(`#accounts tr[data-account="${accountId}"] [data-usd]`).textContent());
    expect(after).toBeCloseTo(before + 5, 6);
    await screenshot(page, "accounts");
  });

  it("draws requests and spend per day as inline SVG", async () => {
    await page.click("nav a[data-page=usage]");
    await page.waitForSelector("#chart-requests svg");
    expect(await page.locator("#chart-requests rect.bar").count()).toBeGreaterThanOrEqual(1);
    expect(await page.locator("#chart-spend rect.bar").count()).toBeGreaterThanOrEqual(1);
    const models = await page.locator("#usage-models td:first-child").allTextContents();
    expect(models).toEqual(expect.arrayContaining(["tiny-chat", "tts-kokoro", "tiny-sd"]));
    await screenshot(page, "usage");
    // Eight pages written by this run (the folder keeps earlier runs' files).
    const written = readdirSync(shots).filter((f) => f.endsWith(".png") && statSync(join(shots, f)).mtimeMs >= runStarted);
    expect(written.length).toBeGreaterThanOrEqual(8);
  });

  it("had no browser console errors or page errors", () => {
    expect(browserErrors).toEqual([]);
  });
});

describe("console admin endpoints", () => {
  const get = (path: string, key: string) => fetch(`${server.baseUrl}${path}`, { headers: { authorization: `Bearer ${key}` } });
  const grant = (id: string, body: unknown, key = server.adminKey) =>
    fetch(`${server.baseUrl}/admin/accounts/${id}/credits`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  it("are admin-only and validate their input", async () => {
    const inference = server.createKey({ usd: 1 });
    for (const path of ["/admin/accounts", "/admin/usage"]) {
      expect((await get(path, inference.key)).status).toBe(403);
      expect((await fetch(`${server.baseUrl}${path}`)).status).toBe(401);
    }
    expect((await grant(inference.accountId, { currency: "USD", amount: 1 }, inference.key)).status).toBe(403);
    const zero = await grant(inference.accountId, { currency: "USD", amount: 0 });
    expect(zero.status).toBe(400);
    expect(((await zero.json()) as { details: Record<string, unknown> }).details).toHaveProperty("amount");
    // Below one micro the ledger cannot hold it: a 400 naming the field, not a 500 from the ledger.
    const dust = await grant(inference.accountId, { currency: "USD", amount: 0.0000001 });
    expect(dust.status).toBe(400);
    expect(JSON.stringify(((await dust.json()) as { details: Record<string, unknown> }).details)).toMatch(/amount.*at least 0\.000001/);
    const currency = await grant(inference.accountId, { currency: "EUR", amount: 1 });
    expect(((await currency.json()) as { details: Record<string, unknown> }).details).toHaveProperty("currency");
    expect((await grant("no-such-account", { currency: "USD", amount: 1 })).status).toBe(404);
    expect(((await (await get("/admin/usage?days=0", server.adminKey)).json()) as { details: Record<string, unknown> }).details).toHaveProperty("days");

    const granted = (await (await grant(inference.accountId, { currency: "DIEM", amount: 2.5 })).json()) as {
      data: { balances: { USD: number; DIEM: number }; keys: { active: number } };
    };
    expect(granted.data).toMatchObject({ balances: { USD: 1, DIEM: 2.5 }, keys: { active: 1 } });
    const list = (await (await get("/admin/accounts", server.adminKey)).json()) as { data: { id: string }[] };
    expect(list.data.map((a) => a.id)).toContain(inference.accountId);
  });
});

describe("live view WebSocket", () => {
  const open = (url: string) =>
    new Promise<{ ws: WebSocket; next: () => Promise<unknown>; closed: Promise<{ code: number; reason: string }> }>((resolve, reject) => {
      const ws = new WebSocket(url);
      const messages: unknown[] = [];
      const waiters: ((m: unknown) => void)[] = [];
      ws.on("message", (data) => {
        const message = JSON.parse(String(data));
        const waiter = waiters.shift();
        if (waiter) waiter(message);
        else messages.push(message);
      });
      const closed = new Promise<{ code: number; reason: string }>((r) => ws.on("close", (code, reason) => r({ code, reason: String(reason) })));
      ws.once("open", () => resolve({ ws, closed, next: () => (messages.length ? Promise.resolve(messages.shift()) : new Promise((r) => waiters.push(r))) }));
      ws.once("error", reject);
    });
  const liveUrl = () => `${server.url.replace(/^http/, "ws")}/api/v1/admin/live`;

  it("refuses a bad key (4401) and an inference key (4403)", async () => {
    const bad = await open(liveUrl());
    bad.ws.send(JSON.stringify({ type: "auth", key: "hth_not-a-key" }));
    expect((await bad.closed).code).toBe(4401);
    const inference = await open(liveUrl());
    inference.ws.send(JSON.stringify({ type: "auth", key: server.createKey().key }));
    expect((await inference.closed).code).toBe(4403);
    const garbage = await open(liveUrl());
    garbage.ws.send("hello");
    expect((await garbage.closed).code).toBe(4401);
  });

  it("pushes a snapshot on auth and on change, and closes with 1001 on shutdown", async () => {
    // Nothing the console did since the mid-file check logged an error either.
    expect(browserErrors).toEqual([]);
    // The browser would reconnect to a stopping server (a console error that is not the console's fault).
    await browser?.close();
    const client = await open(liveUrl());
    client.ws.send(JSON.stringify({ type: "auth", key: server.adminKey }));
    const first = (await client.next()) as { type: string; models: { id: string; state: string }[]; requests: { path: string }[] };
    expect(first.type).toBe("snapshot");
    expect(first.models.map((m) => m.id)).toEqual(["tiny-chat", "tts-kokoro", "tiny-sd"]);
    const seen = first.requests.length;
    await fetch(`${server.baseUrl}/models`);
    let update = (await client.next()) as typeof first;
    while (update.requests.length === seen || update.requests[0]!.path !== "/api/v1/models") update = (await client.next()) as typeof first;
    expect(update.requests[0]).toMatchObject({ method: "GET", path: "/api/v1/models", status: 200, model: null });
    stopped = true;
    const stopping = server.stop();
    expect(await client.closed).toEqual({ code: 1001, reason: "server shutting down" });
    await stopping;
  });
});
