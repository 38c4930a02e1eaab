import { z } from "zod";
import { SearchProviderError } from "./SearchProviderError.js";

/** One web search hit, in the reference's search-result shape (`date` only when the provider knows it). */
export interface SearchResult {
  title: string;
  url: string;
  content: string;
  date?: string;
}

export interface SearchProviderOptions {
  /** A search that takes longer fails (SearchProviderError). */
  timeoutMs: number;
  /** Hits kept per search, best first. */
  maxResults: number;
}

/** SearxNG's JSON answer, reduced to what Hearth reads; other fields (engines, scores...) are ignored. */
const SearxngResponse = z.looseObject({
  results: z.array(
    z.looseObject({
      url: z.string(),
      title: z.string().nullish(),
      content: z.string().nullish(),
      publishedDate: z.string().nullish(),
    }),
  ),
});

/**
 * A SearxNG instance's JSON API: `GET <base>/search?q=...&format=json`. SearxNG must have
 * `json` among `search.formats` in its settings.yml (it answers 403 otherwise). Any failure
 * (unreachable, non-2xx, not the expected JSON, past the timeout) is a SearchProviderError.
 */
export class SearchProvider {
  private readonly endpoint: URL;

  constructor(
    baseUrl: string,
    private readonly options: SearchProviderOptions,
  ) {
    // A base with a path prefix (https://host/searx/) keeps it: "search" resolves under it.
    this.endpoint = new URL("search", baseUrl.endsWith("/") ? baseUrl : `${baseUrl}/`);
  }

  async search(query: string, signal?: AbortSignal): Promise<SearchResult[]> {
    const url = new URL(this.endpoint);
    url.searchParams.set("q", query);
    url.searchParams.set("format", "json");
    const timeout = AbortSignal.timeout(this.options.timeoutMs);
    let response: Response;
    try {
      response = await fetch(url, { headers: { accept: "application/json" }, signal: signal ? AbortSignal.any([signal, timeout]) : timeout });
    } catch (error) {
      const reason = timeout.aborted ? `no answer within ${this.options.timeoutMs} ms` : (error as Error).message;
      throw new SearchProviderError(`the search provider could not be reached (${reason})`);
    }
    if (!response.ok) {
      await response.body?.cancel();
      throw new SearchProviderError(`the search provider answered HTTP ${response.status}`);
    }
    let parsed: z.infer<typeof SearxngResponse>;
    try {
      parsed = SearxngResponse.parse(await response.json());
    } catch {
      throw new SearchProviderError("the search provider's answer is not SearxNG JSON (is format=json enabled?)");
    }
    const seen = new Set<string>();
    const results: SearchResult[] = [];
    for (const hit of parsed.results) {
      if (!/^https?:\/\//i.test(hit.url) || seen.has(hit.url)) continue;
      seen.add(hit.url);
      results.push({
        title: (hit.title ?? "").trim() || hit.url,
        url: hit.url,
        content: (hit.content ?? "").trim(),
        ...(hit.publishedDate ? { date: hit.publishedDate } : {}),
      });
      if (results.length >= this.options.maxResults) break;
    }
    return results;
  }
}
