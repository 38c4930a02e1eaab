/**
 * The `data` of each server-sent event in a response body, as it arrives (multi-line data
 * joined with newlines; comments, ids and event names ignored). `onBytes` runs whenever bytes
 * arrive, so the caller can keep an idle timer fed.
 */
export async function* readSseEvents(body: ReadableStream<Uint8Array>, onBytes?: () => void): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = "";
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      onBytes?.();
      buffer += decoder.decode(value, { stream: true });
      // Events end with a blank line; CRLF and CR line ends are allowed by the format.
      let end: RegExpExecArray | null;
      while ((end = /\r\n\r\n|\n\n|\r\r/.exec(buffer))) {
        const event = buffer.slice(0, end.index);
        buffer = buffer.slice(end.index + end[0].length);
        const data = dataOf(event);
        if (data !== null) yield data;
      }
    }
    const data = dataOf(buffer + decoder.decode());
    if (data !== null) yield data;
  } finally {
    reader.releaseLock();
  }
}

function dataOf(event: string): string | null {
  const lines = event.split(/\r\n|\r|\n/).filter((line) => line.startsWith("data:"));
  if (lines.length === 0) return null;
  return lines.map((line) => line.slice(line.startsWith("data: ") ? 6 : 5)).join("\n");
}
