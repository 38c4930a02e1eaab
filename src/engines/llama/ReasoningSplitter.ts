/**
 * Routes generated text to the answer or to the thought block, on the template's tags
 * (`<think>` / `</think>` for the Qwen and DeepSeek families). Works on text, so it is
 * indifferent to how the tags were tokenized; a possible tag prefix at the end of the
 * text is held until it is clear. Whitespace that only separates a tag from its
 * neighbours is dropped, so the pieces read as the model meant them.
 */
export class ReasoningSplitter {
  private mode: "content" | "reasoning";
  private pending = "";
  /** Whitespace right after a tag is not part of what follows. */
  private skipLeadingWhitespace = false;
  private closedOnce = false;

  constructor(
    private readonly openTag: string,
    private readonly closeTag: string,
    startInReasoning = false,
  ) {
    this.mode = startInReasoning ? "reasoning" : "content";
    this.skipLeadingWhitespace = startInReasoning;
  }

  get inReasoning(): boolean {
    return this.mode === "reasoning";
  }

  /** Whether a thought block has been closed (the answer has begun after it). */
  get closed(): boolean {
    return this.closedOnce;
  }

  push(text: string): { content: string; reasoning: string } {
    this.pending += text;
    return this.drain(false);
  }

  flush(): { content: string; reasoning: string } {
    return this.drain(true);
  }

  private drain(final: boolean): { content: string; reasoning: string } {
    const out = { content: "", reasoning: "" };
    for (;;) {
      if (this.skipLeadingWhitespace) {
        const trimmed = this.pending.replace(/^\s+/, "");
        if (trimmed.length === 0 && !final) {
          this.pending = "";
          return out;
        }
        this.pending = trimmed;
        this.skipLeadingWhitespace = false;
      }
      const tag = this.mode === "reasoning" ? this.closeTag : this.openTag;
      const at = this.pending.indexOf(tag);
      if (at >= 0) {
        let before = this.pending.slice(0, at);
        if (this.mode === "reasoning") before = before.replace(/\s+$/, "");
        out[this.mode] += before;
        this.pending = this.pending.slice(at + tag.length);
        if (this.mode === "reasoning") this.closedOnce = true;
        this.mode = this.mode === "reasoning" ? "content" : "reasoning";
        this.skipLeadingWhitespace = true;
        continue;
      }
      let hold = 0;
      if (!final) {
        for (let n = Math.min(tag.length - 1, this.pending.length); n > 0; n--) {
          if (tag.startsWith(this.pending.slice(-n))) {
            hold = n;
            break;
          }
        }
        // Trailing whitespace of a thought may turn out to precede its closing tag.
        if (this.mode === "reasoning") {
          const body = this.pending.slice(0, this.pending.length - hold);
          hold += body.length - body.replace(/\s+$/, "").length;
        }
      } else if (this.mode === "reasoning") {
        this.pending = this.pending.replace(/\s+$/, "");
      }
      out[this.mode] += this.pending.slice(0, this.pending.length - hold);
      this.pending = this.pending.slice(this.pending.length - hold);
      return out;
    }
  }
}
