/**
 * A web page's readable text, for `file` parts and for web scraping alike: Readability keeps
 * the main text (no menus, footers, scripts); a page where it finds no article falls back to
 * the whole body. linkedom and Readability load on first use (they add to start-up otherwise).
 * Both slow down far faster than a page grows in some shapes (nesting above all), and this runs
 * on the event loop for small file parts (larger ones and scraped pages go to the document
 * worker, which other documents wait for): a page past their bounds is read whole, without
 * Readability, and one past a tree's bounds without a tree, in time linear in its size.
 */
export interface ReadableHtml {
  title: string;
  /** Blocks on their own lines; whitespace inside blocks left as the page has it. */
  text: string;
}

export async function readHtml(html: string, options: { charThreshold?: number } = {}): Promise<ReadableHtml> {
  const shape = tagShape(html);
  if (shape.depth > TREE_MAX_DEPTH || shape.elements > READABILITY_MAX_ELEMENTS || shape.textBreaks > TREE_MAX_TEXT_BREAKS) return streamedText(html);
  const [{ Readability }, { parseHTML }] = await Promise.all([import("@mozilla/readability"), import("linkedom")]);
  const { document } = parseHTML(html);
  // linkedom builds a whole document only from a page with an <html> element: plain text has no
  // root (its title lookup threw), and a fragment ("<p>hi</p>") is its own root, without a body.
  if (document.documentElement?.nodeName !== "HTML") return streamedText(html);
  // Read before Readability, which rewrites the document it is given.
  const pageTitle = (document.title ?? "").trim();
  if (!readabilityCanTake(document.documentElement as unknown as DomNode)) return { title: pageTitle, text: blockText(document.body ?? document.documentElement) };
  let article: { title?: string | null; content?: string | null } | null = null;
  try {
    article = new Readability(document as unknown as ConstructorParameters<typeof Readability>[0], options).parse();
  } catch {
    article = null;
  }
  // Readability rewrote the document it was given: without an article, the page is parsed again.
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
  firstChild: DomNode | null;
  nextSibling: DomNode | null;
}

/**
 * linkedom's parse grows with the square of the nesting (0.6 s at 40,000 levels, about a minute
 * at the 400,000 of a 2 MB page of divs): a page whose tags may nest deeper than this is read as
 * a stream instead, never built as a tree.
 */
export const TREE_MAX_DEPTH = 1_000;

/**
 * linkedom makes a text node of every run of text between a "<" that starts no tag or an
 * entity and the next: 250 KB of "< " became 125,000 nodes, which took 2.9 s to read (0.35 s to
 * parse, the rest in Readability and the walk), and 64 KB of it, small enough to be read on the
 * event loop, about 0.4 s. A real page's text holds a few hundred such breaks; one past this is
 * read as a stream (about 0.17 s at this bound with the tree).
 */
export const TREE_MAX_TEXT_BREAKS = 10_000;

const VOID_ELEMENTS = new Set("AREA BASE BR COL EMBED HR IMG INPUT LINK META PARAM SOURCE TRACK WBR".split(" "));

/** What scanTags reports: text between tags (as offsets), and each tag (its name as written). */
interface TagVisitor {
  /** Text from `start` to `end`, which holds `strayOpens` "<" that start no tag. */
  text(start: number, end: number, strayOpens: number): void;
  /** Returns where scanning goes on (past a script's content), or nothing to go on after the tag. */
  tag(name: string, closing: boolean, selfClosing: boolean, end: number): number | undefined;
}

/**
 * Walks a page's tags and the text between them, comments skipped, each character looked at a
 * bounded number of times: no regular expression, whose backtracking over a page such as
 * "<a<a<a…" (no closing ">") took 25 s for 8 KB. A "<" that starts no tag is text; an
 * unterminated tag or comment ends the page.
 */
function scanTags(html: string, visit: TagVisitor): void {
  // Text runs from `at`; the next tag is looked for from `from` (past any "<" that started none).
  let at = 0;
  let from = 0;
  let strayOpens = 0;
  const text = (end: number) => {
    visit.text(at, end, strayOpens);
    strayOpens = 0;
  };
  while (from < html.length) {
    const open = html.indexOf("<", from);
    if (open < 0) break;
    if (html.startsWith("<!--", open)) {
      text(open);
      const close = html.indexOf("-->", open + 4);
      at = from = close < 0 ? html.length : close + 3;
      continue;
    }
    const closing = html[open + 1] === "/";
    const nameStart = open + (closing ? 2 : 1);
    if (!/[a-zA-Z]/.test(html[nameStart] ?? "")) {
      strayOpens++;
      from = open + 1;
      continue;
    }
    const close = html.indexOf(">", nameStart);
    if (close < 0) {
      text(open);
      return;
    }
    let nameEnd = nameStart;
    while (nameEnd < close && !/[\s/]/.test(html[nameEnd]!)) nameEnd++;
    text(open);
    at = from = visit.tag(html.slice(nameStart, nameEnd), closing, html[close - 1] === "/", close + 1) ?? close + 1;
  }
  text(html.length);
}

/**
 * How deep the page's tags could nest, from its tags alone (opening tags less closing ones at
 * their highest), how many elements it opens, and how many breaks its text has (a "<" that starts
 * no tag, an "&" that may start an entity: see TREE_MAX_TEXT_BREAKS). The depth is an upper bound (a parser closes
 * an unclosed <p> or <li> where the next begins), so a page within it is within it when parsed.
 */
function tagShape(html: string): { depth: number; elements: number; textBreaks: number } {
  let depth = 0;
  let deepest = 0;
  let elements = 0;
  let textBreaks = 0;
  // The next "&" of the page, searched forward only (text runs come in order), so the page is read once.
  let nextAmpersand = html.indexOf("&");
  scanTags(html, {
    text: (start, end, strayOpens) => {
      textBreaks += strayOpens;
      for (; nextAmpersand >= 0 && nextAmpersand < end; nextAmpersand = html.indexOf("&", nextAmpersand + 1)) {
        if (nextAmpersand >= start) textBreaks++;
      }
    },
    tag: (name, closing, selfClosing) => {
      if (closing) depth = Math.max(0, depth - 1);
      else {
        elements++;
        if (!selfClosing && !VOID_ELEMENTS.has(name.toUpperCase())) deepest = Math.max(deepest, ++depth);
      }
      return undefined;
    },
  });
  return { depth: deepest, elements, textBreaks };
}

/**
 * A page's title and text read from its tags as they come (time linear in its size, whatever
 * its nesting; htmlparser2's parser, too, slows with the square of the depth): blocks on their
 * own lines, scripts and styles skipped, entities decoded.
 */
async function streamedText(html: string): Promise<ReadableHtml> {
  const { decodeHTML } = await import("entities");
  const lower = html.toLowerCase();
  let title = "";
  let text = "";
  let preformatted = 0;
  let inTitle = false;
  scanTags(html, {
    text: (start, end) => {
      if (end <= start) return;
      const decoded = decodeHTML(html.slice(start, end));
      if (inTitle) title += decoded;
      else text += preformatted > 0 ? decoded : decoded.replace(/\s+/g, " ");
    },
    tag: (name, closing, _selfClosing, end) => {
      const element = name.toUpperCase();
      if (!closing && SKIPPED_ELEMENTS.has(element)) {
        // Its content is not markup (a script may hold "<div>"): on to its closing tag.
        const close = lower.indexOf(`</${name.toLowerCase()}`, end);
        return close < 0 ? html.length : close;
      }
      if (element === "TITLE") inTitle = !closing;
      else if (element === "PRE") preformatted = Math.max(0, preformatted + (closing ? -1 : 1));
      if (closing && (element === "TD" || element === "TH")) text += "\t";
      else if (BLOCK_ELEMENTS.has(element)) text += "\n";
      return undefined;
    },
  });
  return { title: title.trim(), text };
}

/**
 * Readability's time grows with the cube of the page's nesting: 1 s at 500 levels, 33 s at
 * 2,000 (a 10 KB page of nested divs), minutes past that; and with its element count. Pages
 * deeper or larger than any real article are read whole, as a page without an article is.
 */
export const READABILITY_MAX_DEPTH = 100;
export const READABILITY_MAX_ELEMENTS = 30_000;
/**
 * Its time also grows with every element's depth together (it scores each paragraph's
 * ancestors): 8.4 s for 29,000 paragraphs under 95 levels, 2.3 s for 300 chains of 95. A long
 * real article (20,000 elements about 12 deep) sums to about 240,000.
 */
export const READABILITY_MAX_DEPTH_SUM = 400_000;

/** Whether the tree under `root` is within Readability's bounds (walked without recursion, stopping at the first excess). */
function readabilityCanTake(root: DomNode | null): boolean {
  let elements = 0;
  let depthSum = 0;
  const stack: { node: DomNode; depth: number }[] = root ? [{ node: root, depth: 1 }] : [];
  while (stack.length > 0) {
    const { node, depth } = stack.pop()!;
    if (node.nodeType !== 1) continue;
    depthSum += depth;
    if (depth > READABILITY_MAX_DEPTH || ++elements > READABILITY_MAX_ELEMENTS || depthSum > READABILITY_MAX_DEPTH_SUM) return false;
    for (let child = node.firstChild; child; child = child.nextSibling) stack.push({ node: child, depth: depth + 1 });
  }
  return true;
}

/** An element being read: its name, whether text under it keeps its whitespace, its text so far and the next child to read. */
interface OpenElement {
  name: string;
  pre: boolean;
  inner: string;
  next: DomNode | null;
}

/**
 * textContent with line breaks where blocks end (textContent alone runs headings into
 * paragraphs). Without recursion: a page nested a hundred thousand deep reads like any other.
 * Children are followed by their sibling links, not childNodes, which linkedom builds anew on
 * each read (an indexed loop over it took 3.5 s for an element of 8,000 paragraphs).
 */
function blockText(root: DomNode | null | undefined, pre = false): string {
  if (!root) return "";
  const open: OpenElement[] = [];
  /** A text node's text, "" for what is skipped, or undefined for an element now opened. */
  const enter = (node: DomNode, pre: boolean): string | undefined => {
    if (node.nodeType === 3) return pre ? (node.textContent ?? "") : (node.textContent ?? "").replace(/\s+/g, " ");
    if (node.nodeType !== 1) return "";
    const name = node.nodeName.toUpperCase();
    if (SKIPPED_ELEMENTS.has(name)) return "";
    open.push({ name, pre: pre || name === "PRE", inner: "", next: node.firstChild });
    return undefined;
  };
  const leave = ({ name, inner }: OpenElement): string => {
    if (name === "TD" || name === "TH") return `${inner.trim()}\t`;
    return BLOCK_ELEMENTS.has(name) ? `\n${inner.trim()}\n` : inner;
  };
  const text = enter(root, pre);
  if (text !== undefined) return text;
  for (;;) {
    const current = open.at(-1)!;
    if (current.next) {
      const child = current.next;
      current.next = child.nextSibling;
      current.inner += enter(child, current.pre) ?? "";
      continue;
    }
    open.pop();
    const read = leave(current);
    if (open.length === 0) return read;
    open.at(-1)!.inner += read;
  }
}
