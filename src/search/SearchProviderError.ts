import { ApiError } from "../errors.js";

/** The configured search provider failed: the node's upstream, not the caller, is at fault (502). */
export class SearchProviderError extends ApiError {
  constructor(reason: string) {
    super(502, `Web search failed: ${reason}. Retry later, or send service_parameters.enable_web_search "auto" to answer without it.`, {
      code: "SEARCH_PROVIDER_FAILED",
    });
  }
}
