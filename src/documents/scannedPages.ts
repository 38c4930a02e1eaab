/**
 * The pictures of a scanned PDF: for each page without text, its largest embedded image (a
 * scanner writes one per page), as raw pixels with 1, 3 or 4 channels. What a vision model reads
 * in place of the text a scanned document does not have.
 */
export interface PagePicture {
  page: number;
  data: Uint8ClampedArray;
  width: number;
  height: number;
  channels: 1 | 3 | 4;
}

/** Pictures of the first `maxPages` text-less pages; empty when every page has text or no page has an image. */
export async function scannedPagePictures(data: Buffer, maxPages: number): Promise<PagePicture[]> {
  const { extractImages, extractText, getDocumentProxy } = await import("unpdf");
  // pdf.js takes ownership of (detaches) the array it is given: hand it a copy.
  const pdf = await getDocumentProxy(new Uint8Array(data), { verbosity: 0 });
  try {
    const { text } = await extractText(pdf, { mergePages: false });
    const pictures: PagePicture[] = [];
    for (let page = 1; page <= pdf.numPages && pictures.length < maxPages; page++) {
      if ((text[page - 1] ?? "").trim() !== "") continue;
      const images = await extractImages(pdf, page);
      const largest = images.reduce<(typeof images)[number] | undefined>(
        (best, image) => (!best || image.width * image.height > best.width * best.height ? image : best),
        undefined,
      );
      if (largest) pictures.push({ page, data: largest.data, width: largest.width, height: largest.height, channels: largest.channels });
    }
    return pictures;
  } finally {
    await pdf.destroy();
  }
}
