import { describe, expect, it } from "vitest";
import { multipartBoundary, parseHeaderParameters, parseMultipart } from "../../src/http/multipart.js";

const CRLF = "\r\n";

/** A body as a browser or undici would write it. */
function body(boundary: string, parts: { headers: string[]; data: string | Buffer }[], options: { preamble?: string; epilogue?: string } = {}): Buffer {
  const chunks: Buffer[] = [];
  if (options.preamble) chunks.push(Buffer.from(`${options.preamble}${CRLF}`));
  for (const part of parts) {
    chunks.push(Buffer.from(`--${boundary}${CRLF}${part.headers.join(CRLF)}${CRLF}${CRLF}`));
    chunks.push(Buffer.isBuffer(part.data) ? part.data : Buffer.from(part.data));
    chunks.push(Buffer.from(CRLF));
  }
  chunks.push(Buffer.from(`--${boundary}--${CRLF}${options.epilogue ?? ""}`));
  return Buffer.concat(chunks);
}

describe("multipart/form-data parser", () => {
  it("reads fields and a binary file byte for byte, CRLFs and boundary look-alikes inside data included", () => {
    const binary = Buffer.from([0, 1, 2, 13, 10, 45, 45, 255, 13, 10, 13, 10, 0]);
    const b = "----formdata-undici-0123456789";
    const form = parseMultipart(
      body(b, [
        { headers: ['Content-Disposition: form-data; name="model"'], data: "tiny-whisper" },
        { headers: ['Content-Disposition: form-data; name="file"; filename="a b.wav"', "Content-Type: audio/wav"], data: binary },
        { headers: ['content-disposition: form-data; name="note"'], data: `line one${CRLF}--${b.slice(0, 10)} not a boundary` },
      ]),
      `multipart/form-data; boundary=${b}`,
    );
    expect(form.field("model")).toBe("tiny-whisper");
    expect(form.file("file")).toMatchObject({ filename: "a b.wav", contentType: "audio/wav" });
    expect(form.file("file")!.data.equals(binary)).toBe(true);
    expect(form.field("note")).toBe(`line one${CRLF}--${b.slice(0, 10)} not a boundary`);
    expect(form.field("file")).toBeUndefined();
  });

  it("collects repeated fields, keeps UTF-8, ignores preamble and epilogue", () => {
    const form = parseMultipart(
      body(
        "XyZ",
        [
          { headers: ['Content-Disposition: form-data; name="timestamp_granularities[]"'], data: "word" },
          { headers: ['Content-Disposition: form-data; name="timestamp_granularities[]"'], data: "segment" },
          { headers: ['Content-Disposition: form-data; name="prompt"'], data: "héllo — ✓" },
          { headers: ['Content-Disposition: form-data; name="empty"'], data: "" },
        ],
        { preamble: "This is the preamble.", epilogue: "trailing junk" },
      ),
      'multipart/form-data; boundary="XyZ"',
    );
    expect(form.fields("timestamp_granularities[]")).toEqual(["word", "segment"]);
    expect(form.textFields()).toEqual({ "timestamp_granularities[]": ["word", "segment"], prompt: "héllo — ✓", empty: "" });
  });

  it("decodes quoted parameters with escapes and RFC 5987 file names", () => {
    expect(parseHeaderParameters('form-data; name="a\\"b"; filename=plain.txt')).toEqual({ value: "form-data", params: { name: 'a"b', filename: "plain.txt" } });
    const form = parseMultipart(
      body("b1", [{ headers: ['Content-Disposition: form-data; name="file"; filename="fallback.mp3"; filename*=UTF-8\'\'%C3%A9t%C3%A9.mp3'], data: "x" }]),
      "multipart/form-data; boundary=b1",
    );
    expect(form.file("file")?.filename).toBe("été.mp3");
  });

  it("rejects malformed bodies with 400s", () => {
    const bad =
      (raw: string | Buffer, type = "multipart/form-data; boundary=b") =>
      () =>
        parseMultipart(Buffer.from(raw), type);
    expect(() => multipartBoundary("multipart/form-data")).toThrow(/boundary/);
    expect(bad("no boundary here")).toThrow(/does not occur/);
    expect(bad(`--b${CRLF}Content-Disposition: form-data; name="x"${CRLF}${CRLF}value`)).toThrow(/closing boundary/);
    expect(bad(`--b${CRLF}Content-Type: text/plain${CRLF}${CRLF}v${CRLF}--b--`)).toThrow(/Content-Disposition/);
    expect(bad(`--b${CRLF}Content-Disposition: attachment${CRLF}${CRLF}v${CRLF}--b--`)).toThrow(/form-data/);
    try {
      bad("garbage")();
    } catch (error) {
      expect((error as { status: number }).status).toBe(400);
    }
  });

  it("agrees with what fetch's FormData writes", async () => {
    const data = new FormData();
    data.append("model", "m");
    data.append("file", new Blob([new Uint8Array([1, 2, 3, 13, 10])], { type: "audio/mpeg" }), "x.mp3");
    const request = new Request("http://localhost/", { method: "POST", body: data });
    const form = parseMultipart(Buffer.from(await request.arrayBuffer()), request.headers.get("content-type")!);
    expect(form.field("model")).toBe("m");
    expect([...form.file("file")!.data]).toEqual([1, 2, 3, 13, 10]);
    expect(form.file("file")!.contentType).toBe("audio/mpeg");
  });
});
