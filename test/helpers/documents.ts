import { Document, Packer, Paragraph, TextRun } from "docx";
import ExcelJS from "exceljs";
import { PDFDocument, StandardFonts } from "pdf-lib";
import PptxGenJS from "pptxgenjs";
import { deflateRawSync } from "node:zlib";
import { crc32 } from "./crc32.js";

/** Real documents made by the libraries people make them with, holding the words given. */

export async function makePdf(lines: string[]): Promise<Buffer> {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  const page = pdf.addPage([400, 400]);
  lines.forEach((line, i) => {
    page.drawText(line, { x: 20, y: 360 - i * 20, size: 12, font });
  });
  return Buffer.from(await pdf.save());
}

export async function makeDocx(paragraphs: string[]): Promise<Buffer> {
  const doc = new Document({ sections: [{ children: paragraphs.map((text) => new Paragraph({ children: [new TextRun(text)] })) }] });
  return Packer.toBuffer(doc);
}

export async function makeXlsx(sheets: Record<string, (string | number)[][]>): Promise<Buffer> {
  const workbook = new ExcelJS.Workbook();
  for (const [name, rows] of Object.entries(sheets)) workbook.addWorksheet(name).addRows(rows);
  return Buffer.from(await workbook.xlsx.writeBuffer());
}

// pptxgenjs ships ESM at run time but CommonJS-style typings: TypeScript sees the default export one level down.
const Pptx = PptxGenJS as unknown as typeof PptxGenJS.default;

export async function makePptx(slides: string[]): Promise<Buffer> {
  const pptx = new Pptx();
  for (const text of slides) pptx.addSlide().addText(text, { x: 1, y: 1, w: 8, h: 1 });
  return (await pptx.write({ outputType: "nodebuffer" })) as Buffer;
}

/**
 * A zip written byte by byte, so a test can make what no library writes: an entry whose header
 * understates its size (`declaredSize`), or a bomb. Entries are deflated unless `stored`.
 */
export function makeZip(entries: { name: string; data: Buffer; stored?: boolean; declaredSize?: number }[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = Buffer.from(entry.name, "utf8");
    const body = entry.stored ? entry.data : deflateRawSync(entry.data);
    const fields = (header: Buffer, at: number) => {
      header.writeUInt16LE(20, at); // version needed
      header.writeUInt16LE(0, at + 2); // flags
      header.writeUInt16LE(entry.stored ? 0 : 8, at + 4);
      header.writeUInt32LE(0, at + 6); // time and date
      header.writeUInt32LE(crc32(entry.data), at + 10);
      header.writeUInt32LE(body.length, at + 14);
      header.writeUInt32LE(entry.declaredSize ?? entry.data.length, at + 18);
      header.writeUInt16LE(name.length, at + 22);
    };
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    fields(local, 4);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4); // version made by
    fields(central, 6);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, body);
    centrals.push(central, name);
    offset += local.length + name.length + body.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}
