import { describe, expect, it } from "vitest";
import { lastUserText, needsCurrentInformation, placeWebContext, toSearchQuery, NO_WEB, type WebAugmentation } from "../../src/api/chat/webSearch.js";
import type { ChatMessage } from "../../src/engines/types.js";
import { extractReadable, findUrls } from "../../src/search/scrape.js";

describe("findUrls", () => {
  it("finds distinct http(s) URLs in order, without trailing punctuation or fragments, at most 5", () => {
    const text =
      "See https://a.example/x, (https://en.wikipedia.org/wiki/Foo_(bar)) and http://10.0.0.2:8080/p?q=1. Again https://a.example/x#top; ftp://no.example " +
      "https://b.example/1 https://b.example/2 https://b.example/3 https://b.example/4";
    expect(findUrls(text)).toEqual(["https://a.example/x", "https://en.wikipedia.org/wiki/Foo_(bar)", "http://10.0.0.2:8080/p?q=1", "https://b.example/1", "https://b.example/2"]);
  });
});

describe("needsCurrentInformation (the auto heuristic)", () => {
  const now = new Date("2026-03-01T00:00:00Z");
  it.each(["What's the latest on the Mars mission?", "weather in Oslo tomorrow", "Who won the election?", "news about rust", "look it up please", "Best laptops of 2025"])(
    "searches for %j",
    (text) => expect(needsCurrentInformation(text, now)).toBe(true),
  );
  it.each(["Tell me a joke", "Explain recursion", "What happened in 1815?", "Write a poem about the sea"])("does not search for %j", (text) =>
    expect(needsCurrentInformation(text, now)).toBe(false),
  );
});

describe("queries", () => {
  it("uses the text parts of the latest user message", () => {
    expect(
      lastUserText([
        { role: "user", content: "first" },
        { role: "assistant", content: "reply" },
        { role: "user", content: [{ type: "text", text: "second" }, { type: "image_url" }, { type: "text", text: "part" }] },
      ] as never),
    ).toBe("second\npart");
  });
  it("drops URLs, collapses whitespace and cuts at a word under 400 characters", () => {
    expect(toSearchQuery("  what is\n https://x.example/a   this? ")).toBe("what is this?");
    const query = toSearchQuery("alpha beta ".repeat(60));
    expect(query.length).toBeLessThanOrEqual(400);
    expect(query).toMatch(/(alpha|beta)$/);
  });
});

describe("placeWebContext", () => {
  it("puts the sources after the system prompts and shifts cache positions past them", () => {
    const messages: ChatMessage[] = [
      { role: "system", content: "node" },
      { role: "system", content: "caller" },
      { role: "user", content: "hi" },
    ];
    const web: WebAugmentation = { ...NO_WEB, context: { role: "system", content: "SOURCES" } };
    const placed = placeWebContext(messages, (i) => i + 1, web);
    expect(placed.messages.map((m) => m.content)).toEqual(["node", "caller", "SOURCES", "hi"]);
    expect(placed.positionOf(0)).toBe(1); // the caller's system prompt stays put
    expect(placed.positionOf(1)).toBe(3); // the user turn moves past the sources
    expect(placeWebContext(messages, (i) => i, NO_WEB).messages).toBe(messages);
  });
});

describe("extractReadable", () => {
  it("keeps the article's paragraphs and drops navigation and scripts; falls back to the body's text", async () => {
    const article = await extractReadable(
      `<html><head><title>T</title></head><body><nav>Menu</nav><article><h1>Head</h1><p>${"Words in a sentence. ".repeat(20)}</p><p>Last.</p></article><script>x()</script></body></html>`,
    );
    expect(article.title).toBe("T");
    expect(article.content.startsWith("Head\n\nWords in a sentence.")).toBe(true);
    expect(article.content.endsWith("Last.")).toBe(true);
    expect(article.content).not.toMatch(/Menu|x\(\)/);
    expect(await extractReadable("<html><body><p>tiny</p><script>x()</script></body></html>")).toEqual({ title: "", content: "tiny" });
  });
});
