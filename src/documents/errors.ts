/**
 * Why a document could not become text. Plain domain errors: the chat path turns them into
 * 400s naming the content part, so this module knows nothing about HTTP.
 */

/** The bytes are of a kind no extractor reads (an image, an EPUB, an old binary .doc...). */
export class UnsupportedDocumentError extends Error {
  override name = "UnsupportedDocumentError";
  constructor(readonly described: string) {
    super(`unsupported file type (${described})`);
  }
}

/** The type is known but the library reading it failed: a truncated, encrypted or mislabelled file. */
export class UnreadableDocumentError extends Error {
  override name = "UnreadableDocumentError";
  constructor(
    readonly type: string,
    readonly reason: string,
  ) {
    super(`could not read the ${type} file: ${reason}`);
  }
}

/** An Office file (a zip) that expands past what this node reads: a zip bomb, or a document far past the character limit. */
export class DocumentTooLargeError extends Error {
  override name = "DocumentTooLargeError";
  constructor(
    readonly type: string,
    readonly limitBytes: number,
  ) {
    super(`the ${type} file expands to more than ${limitBytes / 2 ** 20} MB when unzipped; this node reads Office files of at most ${limitBytes / 2 ** 20} MB unzipped`);
  }
}

/** A document whose text runs past what this node reads: its length, or none when extraction stopped early (the rest is not read). */
export class DocumentTextTooLongError extends Error {
  override name = "DocumentTextTooLongError";
  constructor(
    readonly maxChars: number,
    readonly length?: number,
  ) {
    super(`the file's text is ${length === undefined ? `more than ${maxChars}` : length} characters long; this node reads at most ${maxChars} characters per file`);
  }
}
