import type { Cost } from "../../billing/credits.js";
import { costHeaders } from "../../billing/costHeaders.js";
import type { ModelEntry } from "../../config/modelRegistry.js";
import type { ChatGenerateResult } from "../../engines/types.js";
import type { MeteredRequest } from "../../http/meteredRequest.js";

/** What both text services prepare: the model and headers of their own. */
export interface PreparedText {
  entry: ModelEntry;
  engine: { router: string };
  headers: Record<string, string>;
}

/**
 * Sends a text generation (chat completions and the legacy completions), inside the request's
 * metered envelope: streamed as server-sent events, or whole with its cost headers. The usage
 * row gets the engine's token counts and finish reason (a client that left is a 499 there).
 */
export async function sendTextResponse<R extends ChatGenerateResult>(
  paid: MeteredRequest,
  prepared: PreparedText,
  call: {
    stream: boolean;
    chunks: () => AsyncGenerator<unknown, R | undefined, void>;
    complete: () => Promise<{ response: { cost: Cost }; result: R; headers?: Record<string, string> }>;
  },
): Promise<void> {
  // From here on the request writes a usage row (refusals while preparing do not).
  paid.record(prepared.entry.id);
  paid.serve(prepared.entry, prepared.engine.router);
  paid.res.set(prepared.headers);
  paid.showBalance();
  const recordResult = (result: R | undefined) => {
    paid.usage = {
      promptTokens: result?.promptTokens ?? 0,
      completionTokens: result?.completionTokens ?? 0,
      cachedTokens: result?.cachedTokens ?? 0,
      finishReason: result?.finishReason ?? null,
    };
  };
  if (call.stream) {
    const sse = paid.sse();
    const chunks = call.chunks();
    for (let next = await chunks.next(); ; next = await chunks.next()) {
      if (next.done) {
        recordResult(next.value);
        break;
      }
      sse.send(next.value);
    }
    sse.end();
    return;
  }
  const { response, result, headers } = await call.complete();
  recordResult(result);
  if (result.finishReason !== "abort") paid.res.set({ ...headers, ...costHeaders(response.cost) }).json(response);
}
