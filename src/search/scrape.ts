import { readHtmlOffThread } from "../documents/extractDocumentOffThread.js";

/**
 * Web scraping for chat requests: the http(s) URLs of a message, fetched and reduced to their
 * readable text. There is deliberately no block on private or loopback addresses: a LAN node
 * scrapes intranet pages, so whoever may call the chat endpoint may make the node fetch any
 * URL it can reach (see the README's web search section).
 */

/** The reference's limit: up to 5 URLs per request. */
export const MAX_SCRAPED_URLS = 5;

export interface ScrapeOptions {
  timeoutMs: number;
  /** Bytes read from a response body at most; a larger page is cut there. */
  maxBytes: number;
  /** Characters of extracted text kept per page. */
  maxChars: number;
}

export interface ScrapedPage {
  url: string;
  title: string;
  content: string;
}

export type ScrapeOutcome = { ok: true; page: ScrapedPage } | { ok: false; url: string; reason: string };

/** Distinct http(s) URLs in `text`, in order of appearance, at most `limit`. Trailing punctuation is not part of a URL. */
export function findUrls(text: string, limit = MAX_SCRAPED_URLS): string[] {
  const urls: string[] = [];
  for (const match of text.matchAll(/\bhttps?:\/\/[^\s<>"'`]+/gi)) {
    const candidate = trimUrl(match[0]);
    let url: URL;
    try {
      url = new URL(candidate);
    } catch {
      continue;
    }
    url.hash = "";
    const href = url.href;
    if (!urls.includes(href)) urls.push(href);
    if (urls.length >= limit) break;
  }
  return urls;
}

/** Drops trailing punctuation, and a closing bracket the URL did not open (Wikipedia-style links keep theirs). */
function trimUrl(candidate: string): string {
  for (;;) {
    const trimmed = candidate.replace(/[.,;:!?]+$/, "");
    const last = trimmed.at(-1) ?? "";
    const opener = last === ")" ? "(" : last === "]" ? "[" : undefined;
    if (opener === undefined || count(trimmed, opener) >= count(trimmed, last)) return trimmed;
    candidate = trimmed.slice(0, -1);
  }
}

const count = (s: string, ch: string) => s.split(ch).length - 1;

/** Fetches one page and extracts its readable text; every failure is an outcome, never a throw. */
export async function scrapeUrl(url: string, options: ScrapeOptions, signal?: AbortSignal): Promise<ScrapeOutcome> {
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const fail = (reason: string): ScrapeOutcome => ({ ok: false, url, reason });
  try {
    const response = await fetch(url, {
      headers: { accept: "text/html,application/xhtml+xml,text/plain;q=0.9", "user-agent": "Hearth web scraper" },
      redirect: "follow",
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
    if (!response.ok) {
      await response.body?.cancel();
      return fail(`HTTP ${response.status}`);
    }
    const type = (response.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
    const html = type === "text/html" || type === "application/xhtml+xml";
    if (!html && type !== "text/plain") {
      await response.body?.cancel();
      return fail(`unsupported content type "${type || "none"}"`);
    }
    const body = await readCapped(response, options.maxBytes);
    const page = html ? await extractReadable(body, signal) : { title: "", content: collapse(body) };
    if (!page.content) return fail("no readable text");
    return { ok: true, page: { url, title: page.title || url, content: page.content.slice(0, options.maxChars) } };
  } catch (error) {
    return fail(timeout.aborted ? `no answer within ${options.timeoutMs} ms` : (error as Error).message);
  }
}

/** The page's title and readable text (see readHtml, run in the document worker), whitespace collapsed with paragraph breaks kept. */
export async function extractReadable(html: string, signal?: AbortSignal): Promise<{ title: string; content: string }> {
  const { title, text } = await readHtmlOffThread(html, { charThreshold: 100 }, signal);
  return { title: collapse(title), content: collapse(text) };
}

/** Whitespace runs to one space, paragraph breaks kept. */
function collapse(text: string): string {
  return text
    .split(/\n\s*\n/)
    .map((block) => block.replace(/\s+/g, " ").trim())
    .filter(Boolean)
    .join("\n\n");
}

async function readCapped(response: Response, maxBytes: number): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.byteLength;
    if (size >= maxBytes) {
      await reader.cancel();
      break;
    }
  }
  return new TextDecoder().decode(Buffer.concat(chunks).subarray(0, maxBytes));
}
