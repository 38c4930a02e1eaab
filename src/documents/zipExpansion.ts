import { inflateRawSync } from "node:zlib";

/**
 * What an Office file (DOCX, PPTX, XLSX: a zip of XML parts) may expand to before its library
 * reads it: 64 MB holds the XML of any document whose text fits the per-file character limit
 * many times over. A zip bomb (a 1.4 MB DOCX of 400 MB of XML) cost its extraction 69 s and the
 * process 4.8 GB before the extraction worker ran out of heap.
 */
export const MAX_OFFICE_EXPANDED_BYTES = 64 * 2 ** 20;

const END_OF_CENTRAL_DIRECTORY = 0x06054b50;
const CENTRAL_FILE_HEADER = 0x02014b50;
const LOCAL_FILE_HEADER = 0x04034b50;
const STORED = 0;
const DEFLATED = 8;

/**
 * How many bytes the zip's entries expand to, counted up to `limit`: null when it is within the
 * limit (or is no zip this code reads: the library then says what is wrong with it), else the
 * number of bytes read when the limit was passed. Deflated entries are inflated with the output
 * capped, so sizes the headers declare are not trusted: a header can understate them.
 */
export function zipExpansionPastLimit(zip: Buffer, limit: number): number | null {
  const end = findEndOfCentralDirectory(zip);
  if (end < 0) return null;
  const entries = zip.readUInt16LE(end + 10);
  let at = zip.readUInt32LE(end + 16);
  let expanded = 0;
  for (let i = 0; i < entries; i++) {
    if (at + 46 > zip.length || zip.readUInt32LE(at) !== CENTRAL_FILE_HEADER) return null;
    const method = zip.readUInt16LE(at + 10);
    const compressedSize = zip.readUInt32LE(at + 20);
    const declaredSize = zip.readUInt32LE(at + 24);
    const localHeader = zip.readUInt32LE(at + 42);
    at += 46 + zip.readUInt16LE(at + 28) + zip.readUInt16LE(at + 30) + zip.readUInt16LE(at + 32);
    // ZIP64 sizes (0xFFFFFFFF): 4 GB or more, far past any limit.
    if (declaredSize === 0xffffffff || compressedSize === 0xffffffff) return limit + 1;
    if (expanded + declaredSize > limit) return expanded + declaredSize;
    if (localHeader + 30 > zip.length || zip.readUInt32LE(localHeader) !== LOCAL_FILE_HEADER) return null;
    const dataStart = localHeader + 30 + zip.readUInt16LE(localHeader + 26) + zip.readUInt16LE(localHeader + 28);
    const data = zip.subarray(dataStart, dataStart + compressedSize);
    if (method === STORED) expanded += data.length;
    else if (method === DEFLATED) {
      try {
        expanded += inflateRawSync(data, { maxOutputLength: limit - expanded + 1 }).length;
      } catch (error) {
        if ((error as { code?: string }).code === "ERR_BUFFER_TOO_LARGE") return limit + 1;
        return null; // corrupt data: the library reports it
      }
    }
    if (expanded > limit) return expanded;
  }
  return null;
}

/** The end-of-central-directory record, searched from the end past a comment of up to 64 KB; -1 when there is none. */
function findEndOfCentralDirectory(zip: Buffer): number {
  for (let at = zip.length - 22; at >= Math.max(0, zip.length - 22 - 0xffff); at--) {
    if (zip.readUInt32LE(at) === END_OF_CENTRAL_DIRECTORY) return at;
  }
  return -1;
}
