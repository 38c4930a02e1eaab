import type { CostLine } from "../../billing/money.js";
import { webScrapeCost, webSearchCost } from "../../billing/pricing.js";
import type { ServerConfig } from "../../config/serverSettings.js";
import type { ChatMessage } from "../../engines/types.js";
import { InvalidRequestError } from "../../errors.js";
import type { Logger } from "../../logger.js";
import { SearchProvider, type SearchResult } from "../../search/SearchProvider.js";
import { SearchProviderError } from "../../search/SearchProviderError.js";
import { findUrls, scrapeUrl, type ScrapeOptions } from "../../search/scrape.js";
import type { AppliedServiceParameters, ChatCompletionRequest, ChatMessageWire, WebSearchCitation } from "./schema.js";

/**
 * Web search and web scraping for chat requests: what the model is shown (one system message
 * of numbered sources placed right after the system prompts), what the response reports
 * (`web_search_citations`, the stream's first chunk, the `service_web_search_documents` tool
 * call) and what it costs (a line per search and per page scraped successfully).
 */

/** Web search mode after the `web_search` tool is taken into account. */
export type WebSearchMode = AppliedServiceParameters["enable_web_search"];

export interface WebAugmentation {
  mode: WebSearchMode;
  /** The sources the model was given, numbered by position; undefined when no search or scrape ran. */
  sources: WebSearchCitation[] | undefined;
  /** The system message carrying the sources (absent when there are none). */
  context: ChatMessage | undefined;
  /** Billed with the tokens: one line per search run, one per page scraped. */
  costLines: CostLine[];
  /** Stream: the sources are the first chunk emitted. */
  sourcesInStream: boolean;
  /** Add the `service_web_search_documents` tool call to every choice. */
  sourcesAsDocuments: boolean;
}

export const NO_WEB: WebAugmentation = { mode: "off", sources: undefined, context: undefined, costLines: [], sourcesInStream: false, sourcesAsDocuments: false };

/** The name of the tool call carrying the sources (the provider's `venice_web_search_documents`, neutrally spelled). */
export const DOCUMENTS_TOOL = "service_web_search_documents";

/** Queries are cut to the reference's search-query limit. */
const MAX_QUERY_CHARS = 400;
const MAX_SEARCH_RESULTS = 8;
/** Characters of one search snippet and of one scraped page shown to the model. */
const MAX_SNIPPET_CHARS = 1000;
const MAX_PAGE_CHARS = 6000;

/**
 * `auto` searches only when the latest user message looks like it needs current information:
 * it names a time (today, latest, this week, a recent year...), a kind of fact that changes
 * (news, weather, prices, scores, elections, release dates) or asks to search. A local model
 * has no search tool to call, so this stands in for "the model decides"; searching on every
 * turn would bill a search and add its latency to small talk. `on` always searches.
 */
const NEEDS_CURRENT_INFO =
  /\b(today|tonight|yesterday|tomorrow|right now|currently|current|latest|most recent|recent(ly)?|newest|up[- ]to[- ]date|this (week|month|year)|last (night|week|month)|breaking|news|headlines?|weather|forecast|stock price|exchange rate|scores?|standings|election|release date|search (the web|online|for)|look (it |this |that )?up|google)\b/i;

export function needsCurrentInformation(text: string, now = new Date()): boolean {
  if (NEEDS_CURRENT_INFO.test(text)) return true;
  const year = now.getUTCFullYear();
  return [...text.matchAll(/\b(19|20)\d\d\b/g)].some((m) => Number(m[0]) >= year - 1);
}

/** The text of the latest user message (text parts only: attached files are not queries). */
export function lastUserText(messages: readonly ChatMessageWire[]): string {
  const last = messages.findLast((m) => m.role === "user");
  if (!last) return "";
  if (typeof last.content === "string") return last.content;
  return last.content
    .filter((part) => part.type === "text")
    .map((part) => (part as { text: string }).text)
    .join("\n");
}

/** A search query from the user's words: URLs dropped, whitespace collapsed, cut at a word under 400 characters. */
export function toSearchQuery(text: string): string {
  const words = text
    .replace(/\bhttps?:\/\/\S+/gi, " ")
    .replace(/\s+/g, " ")
    .trim();
  if (words.length <= MAX_QUERY_CHARS) return words;
  const cut = words.slice(0, MAX_QUERY_CHARS);
  const space = cut.lastIndexOf(" ");
  return space > MAX_QUERY_CHARS / 2 ? cut.slice(0, space) : cut;
}

export interface WebAugmenterOptions {
  /** Absent: no search provider on this node. */
  provider?: SearchProvider;
  scrape: ScrapeOptions;
  /** Per search and per scraped page, in whole units (USD, and DIEM at the same amount). */
  searchPrice: number;
  scrapePrice: number;
  /** The operator's --web-scraping: fetching caller-chosen URLs from the node's network is opt-in. */
  scrapingAllowed: boolean;
  logger: Logger;
  now?: () => Date;
}

export class WebAugmenter {
  constructor(private readonly options: WebAugmenterOptions) {}

  static fromConfig(config: ServerConfig, logger: Logger): WebAugmenter {
    return new WebAugmenter({
      provider: config.searchUrl ? new SearchProvider(config.searchUrl, { timeoutMs: config.searchTimeoutMs, maxResults: MAX_SEARCH_RESULTS }) : undefined,
      scrape: { timeoutMs: config.searchTimeoutMs, maxBytes: 2 * 1024 * 1024, maxChars: MAX_PAGE_CHARS },
      searchPrice: config.searchPriceUsd,
      scrapePrice: config.scrapePriceUsd,
      scrapingAllowed: config.webScraping === "on",
      logger,
    });
  }

  /** The effective mode; `on` on a node without a provider is the caller's 400, before any work is done. */
  mode(request: ChatCompletionRequest, params: AppliedServiceParameters): WebSearchMode {
    const tool = request.tools?.findIndex((t) => t.type === "web_search") ?? -1;
    // The standard's web_search tool lets the model decide: the same as auto.
    const mode = params.enable_web_search === "off" && tool >= 0 ? "auto" : params.enable_web_search;
    if (params.enable_web_scraping && !this.options.scrapingAllowed) {
      throw InvalidRequestError.forField(["service_parameters", "enable_web_scraping"], "web scraping is not enabled on this node (an operator starts it with --web-scraping on)");
    }
    if (mode === "on" && !this.options.provider) {
      throw InvalidRequestError.forField(
        ["service_parameters", "enable_web_search"],
        'web search is not available on this node (no search provider configured: start it with --search-url); use "auto" or "off"',
      );
    }
    return mode;
  }

  /** Scrapes the URLs of the latest user message and/or searches, as the parameters ask; `mode` is what `mode()` answered for this request. */
  async gather(request: ChatCompletionRequest, params: AppliedServiceParameters, mode: WebSearchMode, requestId: string, signal?: AbortSignal): Promise<WebAugmentation> {
    if (mode === "off" && !params.enable_web_scraping) return NO_WEB;
    const { logger } = this.options;
    const text = lastUserText(request.messages);
    const costLines: CostLine[] = [];
    let sources: WebSearchCitation[] | undefined;
    let heading = "";

    if (params.enable_web_scraping) {
      const urls = findUrls(text);
      const outcomes = await Promise.all(urls.map((url) => scrapeUrl(url, this.options.scrape, signal)));
      const pages = outcomes.flatMap((o) => (o.ok ? [o.page] : []));
      for (const failed of outcomes) if (!failed.ok) logger.warn({ requestId, url: failed.url, reason: failed.reason }, "web scraping skipped a URL");
      if (pages.length > 0) {
        costLines.push(...webScrapeCost(pages.length, this.options.scrapePrice));
        sources = pages.map((p) => ({ title: p.title, url: p.url, content: p.content }));
        heading = "The following web pages, linked in the user's latest message, were fetched";
      }
    }

    // Scraped pages answer the user's own links: web search is bypassed (as the reference does).
    const query = toSearchQuery(text);
    const search = sources === undefined && this.options.provider && query !== "" && (mode === "on" || (mode === "auto" && needsCurrentInformation(text, this.now())));
    if (search) {
      let results: SearchResult[] | undefined;
      try {
        results = await this.options.provider!.search(query, signal);
      } catch (error) {
        if (mode === "on" || !(error instanceof SearchProviderError)) throw error;
        logger.warn({ requestId, err: error.message }, "web search failed; answering without it (enable_web_search auto)");
      }
      if (results) {
        costLines.push(...webSearchCost(1, this.options.searchPrice));
        sources = results.map((r) => ({ title: r.title, url: r.url, content: r.content.slice(0, MAX_SNIPPET_CHARS), ...(r.date ? { date: r.date } : {}) }));
        heading = `The following web search results were found for "${query}"`;
      }
    } else if (mode === "on" && query === "") {
      logger.warn({ requestId }, "web search skipped: the latest user message has no text to search for");
    }

    return {
      mode,
      sources,
      context: sources?.length ? { role: "system", content: this.contextText(heading, sources, params.enable_web_citations) } : undefined,
      costLines,
      sourcesInStream: params.include_search_results_in_stream && sources !== undefined,
      sourcesAsDocuments: params.return_search_results_as_documents && sources !== undefined,
    };
  }

  private contextText(heading: string, sources: WebSearchCitation[], cite: boolean): string {
    const lines = [
      `${heading} on ${this.now().toISOString().slice(0, 10)}. Use them where they help answer the user's latest message; they may be incomplete, outdated or contradict each other.`,
    ];
    if (cite) lines.push("Cite each source you use by its number in the form [REF]0[/REF], right after the statement it supports.");
    for (const [index, source] of sources.entries()) {
      lines.push("", `[${index}] ${source.title}`, `URL: ${source.url}`);
      if (source.date) lines.push(`Published: ${source.date}`);
      if (source.content) lines.push(source.content);
    }
    return lines.join("\n");
  }

  private now(): Date {
    return this.options.now?.() ?? new Date();
  }
}

/**
 * The conversation with the sources placed right after the leading system messages (the
 * node's, the character's and the caller's system prompts), and the caller-message positions
 * moved to match.
 */
export function placeWebContext(
  messages: ChatMessage[],
  positionOf: (callerIndex: number) => number,
  web: WebAugmentation,
): { messages: ChatMessage[]; positionOf: (callerIndex: number) => number } {
  if (!web.context) return { messages, positionOf };
  const firstTurn = messages.findIndex((m) => m.role !== "system");
  const at = firstTurn < 0 ? messages.length : firstTurn;
  return {
    messages: [...messages.slice(0, at), web.context, ...messages.slice(at)],
    positionOf: (i) => {
      const position = positionOf(i);
      return position >= at ? position + 1 : position;
    },
  };
}

/** The `service_web_search_documents` tool call: the sources as JSON arguments `{ documents: [...] }`. */
export function documentsToolCall(web: WebAugmentation, chatId: string, choiceIndex: number) {
  return {
    id: `call_${DOCUMENTS_TOOL}_${chatId.slice(-8)}_${choiceIndex}`,
    type: "function" as const,
    function: { name: DOCUMENTS_TOOL, arguments: JSON.stringify({ documents: web.sources ?? [] }) },
  };
}
