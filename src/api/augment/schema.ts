import { z } from "zod";

/**
 * POST /augment/search, /augment/scrape and /augment/text-parser: the web search, scraping and
 * document extraction chat already uses, offered on their own (the provider's webSearch,
 * webScrape and createTextParser operations).
 */

export const WebSearchRequest = z.strictObject({
  query: z.string().min(1).max(400).describe("The search query"),
  limit: z.number().int().min(1).max(20).default(10).describe("Results to return at most (1-20)"),
  search_provider: z
    .enum(["google", "brave"])
    .optional()
    .describe("Accepted for the provider's clients; this node always asks its own configured SearxNG-compatible provider (see x-service-unsupported-parameters)"),
});
export type WebSearchRequest = z.infer<typeof WebSearchRequest>;

export const WebSearchResponse = z.object({
  query: z.string(),
  results: z.array(
    z.object({
      title: z.string(),
      url: z.string(),
      content: z.string(),
      date: z.string().describe("The result's date when the provider knows it, else an empty string"),
    }),
  ),
});
export type WebSearchResponse = z.infer<typeof WebSearchResponse>;

export const WebScrapeRequest = z.strictObject({
  url: z.url({ protocol: /^https?$/, error: "url must be an absolute http(s) URL" }).describe("The page to fetch"),
});

export const WebScrapeResponse = z.object({
  url: z.string(),
  content: z.string().describe("The page's readable text as markdown: its title as a heading, then its paragraphs"),
  format: z.literal("markdown"),
});
export type WebScrapeResponse = z.infer<typeof WebScrapeResponse>;

/** The multipart fields besides `file`. */
export const TextParserFields = z.looseObject({
  response_format: z.enum(["json", "text"]).default("json").describe('"json": the text and its token count; "text": the text alone, as text/plain'),
});

export const TextParserResponse = z.object({
  text: z.string(),
  tokens: z.number().describe("Tokens of the text, counted with the tokenizer of the node's default text model (an estimate of 4 characters per token when that model is remote)"),
});
export type TextParserResponse = z.infer<typeof TextParserResponse>;
