import { SUPPORTED_DOCUMENTS } from "../../documents/detectDocumentType.js";
import { BALANCE_HEADERS, COST_HEADERS, defineApiGroup, RATE_LIMIT_HEADERS, text } from "../openapi/Operation.js";
import * as schemas from "./schema.js";

const HEADERS = { ...BALANCE_HEADERS, ...RATE_LIMIT_HEADERS, ...COST_HEADERS };

export const augmentApi = defineApiGroup({
  tag: "Augment",
  description:
    "Web search, web scraping and document text on their own: the search provider (--search-url), the scraping opt-in (--web-scraping) " +
    "and the document extractors chat uses. Each call is billed once when it succeeds (--search-price, --scrape-price, --text-parser-price) " +
    "and limited by the key's `augment` rate limit.",
  schemas,
  operations: [
    {
      method: "post",
      path: "/augment/search",
      operationId: "webSearch",
      summary: "Search the web",
      description:
        "Runs the query on the node's SearxNG-compatible search provider. `search_provider` is accepted and ignored " +
        "(named in `x-service-unsupported-parameters`): the operator chose the provider.",
      access: "paid",
      body: { content: { "application/json": schemas.WebSearchRequest } },
      responses: { 200: { description: "The results, best first", headers: HEADERS, content: { "application/json": schemas.WebSearchResponse } } },
      errors: { 502: "The search provider failed or could not be reached", 503: "No search provider is configured on this node (--search-url)" },
    },
    {
      method: "post",
      path: "/augment/scrape",
      operationId: "webScrape",
      summary: "Scrape a web page",
      description:
        "Fetches the URL and returns its readable text as markdown. Opt-in (--web-scraping on): the node fetches any address it can reach, " +
        "private and loopback addresses included, so whoever holds a key can read what the node's network serves.",
      access: "paid",
      body: { content: { "application/json": schemas.WebScrapeRequest } },
      responses: { 200: { description: "The page as markdown", headers: HEADERS, content: { "application/json": schemas.WebScrapeResponse } } },
      errors: { 422: "The page could not be fetched or has no readable text (the reason is in the message)", 503: "Web scraping is not enabled on this node" },
    },
    {
      method: "post",
      path: "/augment/text-parser",
      operationId: "createTextParser",
      summary: "Extract a document's text",
      description: `${SUPPORTED_DOCUMENTS}, read as chat reads file parts.`,
      access: "paid",
      body: { content: { "multipart/form-data": { fields: schemas.TextParserFields, files: { file: "The document (at most --max-upload-mb)" } } } },
      responses: {
        200: {
          description: "The text and its token count (response_format json), or the text alone (text)",
          headers: HEADERS,
          content: { "application/json": schemas.TextParserResponse, "text/plain": text("response_format text: the extracted text") },
        },
      },
      errors: { 413: "The document is larger than --max-upload-mb", 415: "Not a document type this node reads, or an unreadable file" },
    },
  ],
});
