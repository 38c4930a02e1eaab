/**
 * One file fetched from a URL the caller chose (a video to transcribe), read whole up to a size
 * limit. Like scraping it is opt-in for the operator and has no address filter: the node fetches
 * what it can reach, LAN included.
 */
export interface FetchedFile {
  data: Buffer;
  contentType: string | undefined;
}

export type FetchFileOutcome = { ok: true; file: FetchedFile } | { ok: false; reason: string; tooLarge?: boolean };

export interface FetchFileOptions {
  maxBytes: number;
  timeoutMs: number;
  /**
   * Called before the body is read with what it may take (its Content-Length, else maxBytes):
   * the request's hold on memory (RequestContext.holdBytes). What it throws is thrown.
   */
  hold?: (bytes: number) => void;
}

export async function fetchFile(url: string, options: FetchFileOptions, signal: AbortSignal): Promise<FetchFileOutcome> {
  const timeout = AbortSignal.timeout(options.timeoutMs);
  let refusal: { error: unknown } | undefined;
  try {
    const response = await fetch(url, { redirect: "follow", headers: { "user-agent": "Hearth" }, signal: AbortSignal.any([signal, timeout]) });
    if (!response.ok) {
      await response.body?.cancel();
      return { ok: false, reason: `HTTP ${response.status}` };
    }
    const declared = Number(response.headers.get("content-length"));
    if (declared > options.maxBytes) {
      await response.body?.cancel();
      return { ok: false, reason: `the file is ${declared} bytes; this node accepts at most ${options.maxBytes}`, tooLarge: true };
    }
    // A body sent compressed is decoded here: its Content-Length is not what it will take.
    const exact = response.headers.has("content-length") && !response.headers.has("content-encoding") && Number.isFinite(declared);
    try {
      options.hold?.(exact ? declared : options.maxBytes);
    } catch (error) {
      refusal = { error };
      await response.body?.cancel();
      throw error;
    }
    const reader = response.body!.getReader();
    const chunks: Uint8Array[] = [];
    let size = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > options.maxBytes) {
        await reader.cancel();
        return { ok: false, reason: `the file is larger than ${options.maxBytes} bytes, the most this node accepts`, tooLarge: true };
      }
      chunks.push(value);
    }
    return { ok: true, file: { data: Buffer.concat(chunks), contentType: response.headers.get("content-type") ?? undefined } };
  } catch (error) {
    if (refusal) throw refusal.error;
    signal.throwIfAborted();
    return { ok: false, reason: timeout.aborted ? `no answer within ${options.timeoutMs} ms` : (error as Error).message };
  }
}
