import { Document, Packer, Paragraph, TextRun } from "docx";
import ExcelJS from "exceljs";
import { PDFDocument, StandardFonts } from "pdf-lib";
import PptxGenJS from "pptxgenjs";

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
