import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { decodeInlineData, InlineDataError, InlineDataTooLargeError } from "../../src/api/chat/inlineData.js";
import { decodeBase64InSlices } from "../../src/http/base64InSlices.js";
import { parsesOffThread } from "../../src/api/chat/readFilePart.js";
import { detectDocumentType } from "../../src/documents/detectDocumentType.js";
import { DocumentTextTooLongError, UnreadableDocumentError, UnsupportedDocumentError } from "../../src/documents/errors.js";
import { extractDocument } from "../../src/documents/extractDocument.js";
import { extractDocumentOffThread } from "../../src/documents/extractDocumentOffThread.js";
import { READABILITY_MAX_DEPTH, READABILITY_MAX_ELEMENTS, TREE_MAX_TEXT_BREAKS } from "../../src/documents/readHtml.js";
import { makeDocx, makePdf, makePptx, makeXlsx } from "../helpers/documents.js";

describe("document extraction: real files made by the libraries people make them with", () => {
  it("PDF (pdf-lib): the text of every line, in order", async () => {
    const pdf = await makePdf(["Quarterly report for Hearth", "Revenue grew by apricots"]);
    expect(await extractDocument(pdf, { mimeType: "application/pdf", filename: "report.pdf" })).toEqual({
      type: "pdf",
      text: "Quarterly report for Hearth\nRevenue grew by apricots",
    });
  });

  it("PDF: the text unpdf's extractText gives, read page by page; past twice the character limit, the rest is not read", async () => {
    const lines = ["Quarterly report for Hearth", "Revenue grew by apricots", "Costs fell by pears"];
    const pdf = await makePdf(lines);
    const { extractText, getDocumentProxy } = await import("unpdf");
    const reference = (await extractText(await getDocumentProxy(new Uint8Array(pdf)), { mergePages: false })).text.join("\n\n");
    expect((await extractDocument(pdf, { filename: "r.pdf" }, { maxChars: 1000 })).text).toBe(reference.trim());
    const refused = await extractDocument(pdf, { filename: "r.pdf" }, { maxChars: 20 }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(DocumentTextTooLongError);
    expect((refused as Error).message).toBe("the file's text is more than 20 characters long; this node reads at most 20 characters per file");
  });

  it("DOCX (docx): each paragraph", async () => {
    const docx = await makeDocx(["Meeting notes", "The zebra committee approved the budget."]);
    expect(await extractDocument(docx, { filename: "notes.docx" })).toEqual({ type: "docx", text: "Meeting notes\n\nThe zebra committee approved the budget." });
  });

  it("XLSX (exceljs): every sheet as CSV rows under its name, quoting where needed", async () => {
    const xlsx = await makeXlsx({
      Budget: [
        ["Item", "Cost"],
        ["Rent", 1200],
        ["Food, drinks", 310.5],
      ],
      Team: [["Name"], ["Ada"]],
    });
    expect(await extractDocument(xlsx, {})).toEqual({
      type: "xlsx",
      text: 'Sheet "Budget":\nItem,Cost\nRent,1200\n"Food, drinks",310.5\n\nSheet "Team":\nName\nAda',
    });
  });

  it("PPTX (pptxgenjs): the text of each slide, in order", async () => {
    const { type, text } = await extractDocument(await makePptx(["Launch plan for Hearth", "Ship the kumquat release"]), { filename: "deck.pptx" });
    expect(type).toBe("pptx");
    expect(text).toContain("Launch plan for Hearth");
    expect(text).toContain("Ship the kumquat release");
    expect(text.indexOf("Launch plan")).toBeLessThan(text.indexOf("kumquat"));
  });

  it("CSV: delimiters detected and normalised to commas", async () => {
    expect((await extractDocument(Buffer.from("name;city\nAda;London\n\n"), { filename: "people.csv" })).text).toBe("name,city\nAda,London");
    expect((await extractDocument(Buffer.from('a\tb\n"x, y"\t2\n'), { mimeType: "text/csv" })).text).toBe('a,b\n"x, y",2');
  });

  it("HTML (linkedom + Readability): the readable text, blocks on their own lines, no scripts or menus", async () => {
    const article = `<p>${"Hearth serves language models on a small machine. ".repeat(6)}</p>`;
    const html = `<!doctype html><html><head><title>Hearth notes</title><script>var secret = 1;</script></head>
      <body><nav><a href="/">Home</a> <a href="/x">Menu entry</a></nav>
      <article><h1>Running Hearth</h1>${article}<p>The pelican paragraph.</p></article>
      <footer>Copyright footer</footer></body></html>`;
    const { type, text } = await extractDocument(Buffer.from(html), { mimeType: "text/html" });
    expect(type).toBe("html");
    expect(text).toContain("Hearth notes");
    expect(text).toMatch(/Running Hearth\n+Hearth serves/);
    expect(text).toContain("The pelican paragraph.");
    expect(text).not.toContain("secret");
    expect(text).not.toContain("Menu entry");
  });

  it("HTML nested deeper than any article (a 2 MB page of divs) is read as a stream: its text, entities decoded, scripts skipped", async () => {
    // Readability took 33 s at 2,000 levels and linkedom's parse a minute at 400,000; this read never built a tree.
    const html = `<html><head><title>Deep &amp; dark</title><script>if (a < b) "<div>"</script></head><body><!-- <p>hidden</p> -->${"<div>".repeat(400_000)}Hello <b>there</b> &lt;3<pre>a\n  b</pre><table><tr><td>1</td><td>2</td></tr></table></body></html>`;
    const { text } = await extractDocument(Buffer.from(html), { mimeType: "text/html" });
    expect(text.split("\n").filter((line) => line.trim())).toEqual(["Deep & dark", "Hello there <3", "a", "  b", "1\t2"]);
  });

  it("HTML of more elements than Readability takes is read whole, every block on its line", async () => {
    const html = `<html><body><nav>Menu</nav>${Array.from({ length: READABILITY_MAX_ELEMENTS }, (_, i) => `<p>Line ${i}</p>`).join("")}</body></html>`;
    const { text } = await extractDocument(Buffer.from(html), { mimeType: "text/html" });
    const lines = text.split("\n").filter((line) => line.trim());
    expect(lines).toHaveLength(READABILITY_MAX_ELEMENTS + 1);
    expect(lines.slice(0, 3)).toEqual(["Menu", "Line 0", "Line 1"]);
    expect(lines.at(-1)).toBe(`Line ${READABILITY_MAX_ELEMENTS - 1}`);
  });

  it('HTML whose text breaks into more runs than a tree should hold (entities, a "<" that starts no tag) is read as a stream', async () => {
    // linkedom makes a text node of each run: 250 KB of "< " took 2.9 s to read from its tree.
    const page = (breaks: number) =>
      `<!doctype html><html><head><title>Breaks</title></head><body><nav><a href="/">Home</a> <a href="/x">Menu entry</a></nav>
      <article><h1>Many breaks</h1><p>${"Hearth serves language models on a small machine. ".repeat(6)}</p><p>${"1 &lt; 2 & ".repeat(breaks / 2)}</p></article></body></html>`;
    // Within the bound: Readability's article, the menu left out.
    const within = (await extractDocument(Buffer.from(page(TREE_MAX_TEXT_BREAKS - 100)), { mimeType: "text/html" })).text;
    expect(within).toContain("1 < 2 & 1 < 2");
    expect(within).not.toContain("Menu entry");
    // Past it: the whole page as a stream, the menu included, entities decoded the same.
    const past = (await extractDocument(Buffer.from(page(TREE_MAX_TEXT_BREAKS + 100)), { mimeType: "text/html" })).text;
    expect(past).toContain("Menu entry");
    expect(past).toContain("1 < 2 & 1 < 2");
    expect(past.split("\n").filter((line) => line.trim())[0]).toBe("Breaks");
    // Stray "<" count too: 100,000 of them in one paragraph.
    const stray = (await extractDocument(Buffer.from(`<html><body><nav>Menu</nav><p>${"< ".repeat(100_000)}</p></body></html>`), { mimeType: "text/html" })).text;
    expect(stray.split("\n").filter((line) => line.trim())).toEqual(["Menu", "< ".repeat(100_000).trim()]);
  });

  it("HTML nested past Readability's depth, but not past a tree's, is read from its tree whole", async () => {
    const html = `<html><body>${"<section>".repeat(READABILITY_MAX_DEPTH + 10)}<h2>Deep</h2><p>page &amp; more</p></body></html>`;
    const { text } = await extractDocument(Buffer.from(html), { mimeType: "text/html" });
    expect(text.split("\n").filter((line) => line.trim())).toEqual(["Deep", "page & more"]);
  });

  it("HTML whose elements' depths sum past Readability's bound is read whole from its tree", async () => {
    // 300 chains of 95 levels, each ending in a paragraph: Readability would keep one of them (2.3 s).
    const chains = Array.from(
      { length: 300 },
      (_, i) => `${"<div>".repeat(95)}<p>Paragraph ${i}, with enough words and commas to be scored as an article.</p>${"</div>".repeat(95)}`,
    );
    const html = `<html><body>${chains.join("")}</body></html>`;
    const { text } = await extractDocument(Buffer.from(html), { mimeType: "text/html" });
    const lines = text.split("\n").filter((line) => line.trim());
    expect(lines).toHaveLength(300);
    expect(lines[299]).toBe("Paragraph 299, with enough words and commas to be scored as an article.");
  });

  it('HTML whose tags never close ("<a<a<a…", 1 MB) is read up to the first, in time linear in its size', async () => {
    // A regular expression's backtracking over this took 25 s for 8 KB.
    const { text } = await extractDocument(Buffer.from(`<html><body><p>Hello</p>${"<a".repeat(500_000)}`), { mimeType: "text/html" });
    expect(text).toBe("Hello");
  });

  it("HTML without an <html> element, plain text or a fragment, is read as it stands", async () => {
    expect((await extractDocument(Buffer.from("hello world, 1 < 2"), { mimeType: "text/html" })).text).toBe("hello world, 1 < 2");
    expect((await extractDocument(Buffer.from("<h2>Tiny</h2><p>page &amp; more</p>"), { mimeType: "text/html" })).text).toBe("Tiny\n\npage & more");
  });

  it("HTML too short for Readability falls back to the body's text", async () => {
    const { text } = await extractDocument(Buffer.from("<html><body><h2>Tiny</h2><p>page</p></body></html>"), { filename: "x.html" });
    expect(text).toBe("Tiny\n\npage");
  });

  it("Markdown and plain text are read as UTF-8 (BOM dropped, newlines normalised)", async () => {
    expect(await extractDocument(Buffer.from("# Title\r\n\r\n\r\n\r\n- café item\r\n"), { filename: "README.md" })).toEqual({ type: "markdown", text: "# Title\n\n- café item" });
    expect(await extractDocument(Buffer.from("\uFEFFplain words"), { mimeType: "text/plain" })).toEqual({ type: "text", text: "plain words" });
    expect((await extractDocument(Buffer.from("print('hi')"), { filename: "main.py" })).type).toBe("text");
  });

  it("the type comes from the MIME type, then the extension, then the bytes", async () => {
    const pdf = await makePdf(["sniffed"]);
    const docx = await makeDocx(["sniffed"]);
    const xlsx = await makeXlsx({ S: [["sniffed"]] });
    const pptx = await makePptx(["sniffed"]);
    expect(detectDocumentType(Buffer.from("a,b"), { mimeType: "text/csv; charset=utf-8", filename: "x.txt" })).toBe("csv");
    expect(detectDocumentType(Buffer.from("a,b"), { mimeType: "application/octet-stream", filename: "x.csv" })).toBe("csv");
    expect(detectDocumentType(pdf, {})).toBe("pdf");
    expect(detectDocumentType(docx, { mimeType: "application/octet-stream" })).toBe("docx");
    expect(detectDocumentType(xlsx, { filename: "no-extension" })).toBe("xlsx");
    expect(detectDocumentType(pptx, {})).toBe("pptx");
    expect(detectDocumentType(Buffer.from("  <!DOCTYPE html><html></html>"), {})).toBe("html");
    expect(detectDocumentType(Buffer.from("just words"), {})).toBe("text");
    expect(detectDocumentType(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0]), {})).toBeUndefined();
    expect(detectDocumentType(Buffer.from([0xff, 0xfe, 0xfd]), {})).toBeUndefined();
  });

  it("an unknown type is UnsupportedDocumentError listing what is supported", async () => {
    const error = await extractDocument(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2]), { mimeType: "image/png", filename: "cat.png" }).catch((e) => e);
    expect(error).toBeInstanceOf(UnsupportedDocumentError);
    expect(error.message).toBe(
      "unsupported file type (image/png, cat.png; supported: PDF, DOCX, PPTX, XLSX, CSV, HTML, Markdown and plain text (TXT, JSON, YAML, XML, source code))",
    );
  });

  it("a corrupt document is UnreadableDocumentError carrying the library's reason", async () => {
    const pdf = await extractDocument(Buffer.from("%PDF-1.7\nthis is not a pdf body"), {}).catch((e) => e);
    expect(pdf).toBeInstanceOf(UnreadableDocumentError);
    expect(pdf.message).toBe("could not read the PDF file: Invalid PDF structure.");
    const truncated = (await makeDocx(["cut short"])).subarray(0, 200);
    const docx = await extractDocument(truncated, { filename: "cut.docx" }).catch((e) => e);
    expect(docx).toBeInstanceOf(UnreadableDocumentError);
    expect(docx.message).toMatch(/^could not read the DOCX file: .*zip/i);
    const notUtf8 = await extractDocument(Buffer.from([0x61, 0xff, 0x62]), { filename: "x.txt" }).catch((e) => e);
    expect(notUtf8.message).toBe("could not read the text file: the file is not UTF-8 text");
  });
});

describe("inline data (data URLs and base64)", () => {
  it("decodes base64 data URLs, percent-encoded data URLs and bare base64", async () => {
    expect(await decodeInlineData("data:text/plain;base64,aGVsbG8=", 100)).toEqual({ mimeType: "text/plain", data: Buffer.from("hello") });
    expect(await decodeInlineData("data:text/csv;charset=utf-8,a%2Cb%0A1%2C2", 100)).toEqual({ mimeType: "text/csv", data: Buffer.from("a,b\n1,2") });
    expect(await decodeInlineData("aGVs\nbG8", 100)).toEqual({ data: Buffer.from("hello") });
  });

  it("refuses malformed base64, URLs and content over the limit before decoding", async () => {
    await expect(decodeInlineData("data:application/pdf;base64,not*base64!", 100)).rejects.toThrow(new InlineDataError("not valid base64"));
    await expect(decodeInlineData("", 100)).rejects.toThrow(InlineDataError);
    await expect(decodeInlineData("https://example.com/a.pdf", 100)).rejects.toThrow(/does not fetch URLs/);
    await expect(decodeInlineData(Buffer.alloc(300).toString("base64"), 100)).rejects.toThrow(InlineDataTooLargeError);
  });

  it("decodes base64 of several slices exactly as one call does, in either alphabet, padded or not, with whitespace anywhere", async () => {
    const bytes = randomBytes(3 * (1 << 20) + 2); // a little over three 1 MiB slices of characters, ending in padding
    const standard = bytes.toString("base64");
    expect(standard.endsWith("=")).toBe(true);
    for (const text of [standard, bytes.toString("base64url"), standard.replace(/=+$/, ""), standard.replace(/(.{76})/g, "$1\r\n")]) {
      const decoded = await decodeBase64InSlices(text);
      expect(decoded.ok && decoded.data.equals(bytes)).toBe(true);
    }
  });

  it("finds what is not base64 in any slice, and refuses by size before decoding", async () => {
    const text = randomBytes(3 << 20).toString("base64");
    const broken = (at: number, what: string) => `${text.slice(0, at)}${what}${text.slice(at + 1)}`;
    expect(await decodeBase64InSlices(broken(text.length - 10, "*"))).toEqual({ ok: false, reason: "invalid" });
    expect(await decodeBase64InSlices(broken(2_500_000, "="))).toEqual({ ok: false, reason: "invalid" });
    expect(await decodeBase64InSlices(`${text}A`)).toEqual({ ok: false, reason: "invalid" }); // 4n+1 characters
    expect(await decodeBase64InSlices(`${text}A===`)).toEqual({ ok: false, reason: "invalid" });
    expect(await decodeBase64InSlices(text, 1000)).toEqual({ ok: false, reason: "too-large", bytes: 3 << 20 });
  });
});

describe("which chat file parts are read in the document worker, off the event loop", () => {
  it("PDFs and Office files always; HTML and CSV past 64 KB (1 MB of short CSV fields took papaparse 0.8 to 1.1 s); anything past 1 MB", async () => {
    const pdf = await makePdf(["one line"]);
    expect(parsesOffThread(pdf, { mimeType: "application/pdf" })).toBe(true);
    expect(parsesOffThread(await makeDocx(["one line"]), { filename: "a.docx" })).toBe(true);
    for (const [hints, unit] of [
      [{ mimeType: "text/csv" }, "\n"],
      [{ filename: "page.html" }, "< "],
    ] as const) {
      expect(parsesOffThread(Buffer.from(unit.repeat(64_000 / unit.length)), hints)).toBe(false);
      expect(parsesOffThread(Buffer.from(unit.repeat(64_002 / unit.length)), hints)).toBe(true);
    }
    expect(parsesOffThread(Buffer.from("plain words ".repeat(80_000)), { mimeType: "text/plain" })).toBe(false);
    expect(parsesOffThread(Buffer.from("plain words ".repeat(90_000)), { mimeType: "text/plain" })).toBe(true);
  });

  it("a document that takes the worker past the time limit is refused as unreadable, and the next one is read", async () => {
    // 4 MB of empty CSV rows: papaparse reads them in one call of 1.3 to 3 s on the 2-core host, past
    // the 50 ms limit and the half second an aborted document is given to end by itself (a document
    // that ends within it is answered: 900 KB, 0.3 to 0.7 s, sometimes was).
    const slow = extractDocumentOffThread(Buffer.from("\n".repeat(4_000_000)), { filename: "rows.csv" }, { maxChars: 1_000_000 }, undefined, 50);
    await expect(slow).rejects.toThrow(/^could not read the CSV file: reading it took more than 0.05 s, the most this node spends on one file$/);
    expect(await extractDocumentOffThread(Buffer.from("a,b\n1,2\n"), { filename: "small.csv" }, { maxChars: 1_000_000 })).toEqual({ type: "csv", text: "a,b\n1,2" });
  });
});
