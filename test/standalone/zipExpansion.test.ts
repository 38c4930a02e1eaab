import { describe, expect, it } from "vitest";
import { extractDocument } from "../../src/documents/extractDocument.js";
import { DocumentTooLargeError } from "../../src/documents/errors.js";
import { MAX_OFFICE_EXPANDED_BYTES, zipExpansionPastLimit } from "../../src/documents/zipExpansion.js";
import { makeDocx, makePptx, makeXlsx, makeZip } from "../helpers/documents.js";

const MB = 2 ** 20;

describe("what an Office file expands to, before its library reads it", () => {
  it("lets through real documents, as their libraries write them", async () => {
    for (const file of [await makeDocx(["hello"]), await makeXlsx({ Sheet: [["a", 1]] }), await makePptx(["slide"])]) {
      expect(zipExpansionPastLimit(file, MAX_OFFICE_EXPANDED_BYTES)).toBeNull();
    }
  });

  it("counts deflated and stored entries together against the limit", () => {
    const zip = makeZip([
      { name: "a.xml", data: Buffer.alloc(600_000, 97) },
      { name: "b.bin", data: Buffer.alloc(600_000, 1), stored: true },
    ]);
    expect(zipExpansionPastLimit(zip, 1_300_000)).toBeNull();
    expect(zipExpansionPastLimit(zip, 1_000_000)).toBeGreaterThan(1_000_000);
  });

  it("inflates what a header understates: the declared size is not trusted", () => {
    const lying = makeZip([{ name: "word/document.xml", data: Buffer.alloc(3 * MB, 97), declaredSize: 100 }]);
    expect(lying.length).toBeLessThan(10_000);
    expect(zipExpansionPastLimit(lying, 1 * MB)).toBeGreaterThan(1 * MB);
  });

  it("leaves what is no zip, or a broken one, to the library", () => {
    expect(zipExpansionPastLimit(Buffer.from("not a zip at all"), MB)).toBeNull();
    const zip = makeZip([{ name: "a.xml", data: Buffer.alloc(1000, 97) }]);
    expect(zipExpansionPastLimit(zip.subarray(0, zip.length - 30), MB)).toBeNull();
  });

  it("refuses a DOCX bomb before mammoth reads it, naming the limit", async () => {
    const xml = Buffer.alloc(MAX_OFFICE_EXPANDED_BYTES + MB, "<w:p><w:r><w:t>a</w:t></w:r></w:p>");
    const bomb = makeZip([
      { name: "[Content_Types].xml", data: Buffer.from("<Types/>") },
      { name: "word/document.xml", data: xml },
    ]);
    expect(bomb.length).toBeLessThan(1 * MB);
    const error = await extractDocument(bomb, { filename: "bomb.docx" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DocumentTooLargeError);
    expect((error as Error).message).toMatch(/DOCX file expands to more than 64 MB/);
  });
});
