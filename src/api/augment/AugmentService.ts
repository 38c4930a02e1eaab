import { webScrapeCost, webSearchCost } from "../../billing/pricing.js";
import type { CostLine } from "../../billing/money.js";
import { costLine } from "../../billing/money.js";
import type { ServerConfig } from "../../config/serverSettings.js";
import { DocumentTextTooLongError, DocumentTooLargeError, UnreadableDocumentError, UnsupportedDocumentError } from "../../documents/errors.js";
import { extractDocumentOffThread } from "../../documents/extractDocumentOffThread.js";
import { ApiError, InvalidRequestError, PayloadTooLargeError } from "../../errors.js";
import type { MultipartPart } from "../../http/multipart.js";
import type { ModelManager } from "../../models/ModelManager.js";
import { SearchProvider } from "../../search/SearchProvider.js";
import { SearchProviderError } from "../../search/SearchProviderError.js";
import { scrapeUrl } from "../../search/scrape.js";
import type { TextParserResponse, WebScrapeResponse, WebSearchRequest, WebSearchResponse } from "./schema.js";

/** 503: an augment operation this node's operator has not set up, naming the setting that does. */
export class AugmentUnavailableError extends ApiError {
  constructor(message: string) {
    super(503, message, { code: "AUGMENT_UNAVAILABLE" });
  }
}

/** Characters per token when no local tokenizer can count (the default text model is remote). */
const CHARS_PER_TOKEN_ESTIMATE = 4;
/** A scraped page's text is cut here (the chat path keeps less per page; a caller asking for one page wants it whole). */
const MAX_SCRAPED_CHARS = 200_000;

/**
 * Web search, scraping and document text on their own. The search provider and the scraping
 * opt-in are the ones chat uses (--search-url, --web-scraping), and so are the prices.
 */
export class AugmentService {
  private readonly provider: SearchProvider | undefined;

  constructor(
    private readonly config: ServerConfig,
    private readonly models: ModelManager,
  ) {
    this.provider = config.searchUrl ? new SearchProvider(config.searchUrl, { timeoutMs: config.searchTimeoutMs, maxResults: 20 }) : undefined;
  }

  searchCost(): CostLine[] {
    return webSearchCost(1, this.config.searchPriceUsd);
  }

  scrapeCost(): CostLine[] {
    return webScrapeCost(1, this.config.scrapePriceUsd);
  }

  parseCost(): CostLine[] {
    const price = this.config.textParserPriceUsd;
    return price > 0 ? [costLine("text-parser", 1, 1, { usd: price, diem: price })] : [];
  }

  /** Refuses before any work when the node has no search provider. */
  requireSearch(): SearchProvider {
    if (!this.provider)
      throw new AugmentUnavailableError("web search is not available on this node: no search provider is configured (an operator sets --search-url / HEARTH_SEARCH_URL)");
    return this.provider;
  }

  /** Refuses before any work when the operator has not opted in to fetching caller-chosen URLs. */
  requireScraping(): void {
    if (this.config.webScraping !== "on") {
      throw new AugmentUnavailableError("web scraping is not enabled on this node (an operator starts it with --web-scraping on / HEARTH_WEB_SCRAPING=on)");
    }
  }

  async search(request: WebSearchRequest, signal: AbortSignal): Promise<WebSearchResponse> {
    const provider = this.requireSearch();
    let results: Awaited<ReturnType<SearchProvider["search"]>>;
    try {
      results = await provider.search(request.query, signal);
    } catch (error) {
      // The chat path's message suggests a chat parameter; here the search is the whole request.
      if (error instanceof SearchProviderError) throw new ApiError(502, error.message.replace(/ Retry later.*$/, " Retry later."), { code: "SEARCH_PROVIDER_FAILED" });
      throw error;
    }
    return { query: request.query, results: results.slice(0, request.limit).map((r) => ({ title: r.title, url: r.url, content: r.content, date: r.date ?? "" })) };
  }

  async scrape(url: string, signal: AbortSignal): Promise<WebScrapeResponse> {
    this.requireScraping();
    const outcome = await scrapeUrl(url, { timeoutMs: this.config.searchTimeoutMs, maxBytes: 5 * 1024 * 1024, maxChars: MAX_SCRAPED_CHARS }, signal);
    signal.throwIfAborted();
    if (!outcome.ok) throw new ApiError(422, `Could not scrape ${url}: ${outcome.reason}`, { code: "SCRAPE_FAILED" });
    const { title, content } = outcome.page;
    return { url, content: title && title !== url ? `# ${title}\n\n${content}` : content, format: "markdown" };
  }

  /** The document's text; unreadable or unsupported files are 415s that say why. */
  async parse(file: MultipartPart | undefined, maxBytes: number, signal: AbortSignal): Promise<TextParserResponse> {
    if (!file || file.data.length === 0) throw InvalidRequestError.forField(["file"], 'upload the document as the multipart field "file"');
    if (file.data.length > maxBytes) {
      throw new PayloadTooLargeError(`the document is ${(file.data.length / 1e6).toFixed(1)} MB; this node parses documents up to ${maxBytes / 1e6} MB (--max-upload-mb)`);
    }
    let text: string;
    try {
      ({ text } = await extractDocumentOffThread(file.data, { mimeType: file.contentType, filename: file.filename }, { maxChars: this.config.maxFileChars }, signal));
    } catch (error) {
      if (error instanceof UnsupportedDocumentError || error instanceof UnreadableDocumentError) {
        throw new ApiError(415, `Could not parse the document: ${error.message}`, { code: "UNSUPPORTED_DOCUMENT" });
      }
      if (error instanceof DocumentTooLargeError) throw new PayloadTooLargeError(`Could not parse the document: ${error.message}`);
      if (error instanceof DocumentTextTooLongError) throw InvalidRequestError.forField(["file"], error.message);
      throw error;
    }
    return { text, tokens: await this.countTokens(text) };
  }

  /** Tokens of `text` by the default text model's tokenizer when it is local, else an estimate. */
  private async countTokens(text: string): Promise<number> {
    const entry = this.models.defaultFor("text");
    if (entry && text.length > 0) {
      const lease = await this.models.acquire(entry.id, "chat");
      try {
        const count = await lease.engine.countTokensAtLeast?.([text], Number.POSITIVE_INFINITY);
        if (count !== undefined) return count;
      } finally {
        lease.release();
      }
    }
    return Math.ceil(text.length / CHARS_PER_TOKEN_ESTIMATE);
  }
}
