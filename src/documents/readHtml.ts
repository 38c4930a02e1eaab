/**
 * A web page's readable text, for `file` parts and for web scraping alike: Readability keeps
 * the main text (no menus, footers, scripts); a page where it finds no article falls back to
 * the whole body. linkedom and Readability load on first use (they add to start-up otherwise).
 */
export interface ReadableHtml {
  title: string;
  /** Blocks on their own lines; whitespace inside blocks left as the page has it. */
  text: string;
}

export async function readHtml(html: string, options: { charThreshold?: number } = {}): Promise<ReadableHtml> {
  const [{ Readability }, { parseHTML }] = await Promise.all([import("@mozilla/readability"), import("linkedom")]);
  const { document } = parseHTML(html);
  // Read before Readability, which rewrites the document it is given.
  const pageTitle = (document.title ?? "").trim();
  let article: { title?: string | null; content?: string | null } | null = null;
  try {
    article = new Readability(document as unknown as ConstructorParameters<typeof Readability>[0], options).parse();
  } catch {
    article = null;
  }
  const main = article?.content ? blockText(parseHTML(`<!doctype html><html><body>${article.content}</body></html>`).document.body) : "";
  if (main.trim()) return { title: (article?.title ?? "").trim() || pageTitle, text: main };
  const fresh = parseHTML(html).document;
  return { title: pageTitle, text: blockText(fresh.body ?? fresh.documentElement) };
}

/** Elements that start a new line when a page is read as text. */
const BLOCK_ELEMENTS = new Set(
  "ADDRESS ARTICLE ASIDE BLOCKQUOTE BR DD DIV DL DT FIELDSET FIGCAPTION FIGURE FOOTER FORM H1 H2 H3 H4 H5 H6 HEADER HR LI MAIN NAV OL P PRE SECTION TABLE TR UL".split(" "),
);
const SKIPPED_ELEMENTS = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "SVG"]);

interface DomNode {
  nodeType: number;
  nodeName: string;
  textContent: string | null;
  childNodes: ArrayLike<DomNode>;
}

/** textContent with line breaks where blocks end (textContent alone runs headings into paragraphs). */
function blockText(node: DomNode | null | undefined, pre = false): string {
  if (!node) return "";
  if (node.nodeType === 3) return pre ? (node.textContent ?? "") : (node.textContent ?? "").replace(/\s+/g, " ");
  if (node.nodeType !== 1) return "";
  const name = node.nodeName.toUpperCase();
  if (SKIPPED_ELEMENTS.has(name)) return "";
  let inner = "";
  for (let i = 0; i < node.childNodes.length; i++) inner += blockText(node.childNodes[i], pre || name === "PRE");
  if (name === "TD" || name === "TH") return `${inner.trim()}\t`;
  return BLOCK_ELEMENTS.has(name) ? `\n${inner.trim()}\n` : inner;
}
