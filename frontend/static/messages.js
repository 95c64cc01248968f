// The conversation: user messages and assistant turns.  A turn's answer
// streams in as raw text (textContent); `render` and `message_done` carry
// server-sanitized HTML that replaces it: a `render` only the round's
// top-level blocks finished since the last one (added once) and its last,
// growing block (redrawn), so a long answer costs the page the same per token.
// What comes within a frame is drawn once at the next one; finished blocks go in
// groups the browser skips while off-screen (app.css `.blocks-done`).
// Tool cards sit between the text blocks of the rounds they came from.

import { copyText, el, formatBytes, sanitizedFragment, setSanitizedHtml } from "./dom.js";

const FINISH_NOTES = {
  length: "The answer was cut off: the model reached its length limit.",
  cancelled: "Stopped.",
  error: "The answer ended because of an error.",
  round_limit: "Stopped after the maximum number of tool rounds.",
};

/** Give every code block in sanitized HTML a copy button. */
export function decorateCode(root) {
  for (const pre of root.querySelectorAll("pre")) {
    if (pre.parentElement?.classList.contains("code-block")) continue;
    const wrap = el("div", { class: "code-block" });
    pre.replaceWith(wrap);
    const button = el("button", { type: "button", class: "copy-btn", text: "Copy", "aria-label": "Copy code" });
    button.addEventListener("click", async () => {
      const ok = await copyText((pre.querySelector("code") || pre).textContent);
      button.textContent = ok ? "Copied" : "Copy failed";
      setTimeout(() => { button.textContent = "Copy"; }, 1500);
    });
    wrap.append(button, pre);
  }
}

// How much of a long answer's finished blocks one frame takes in: a fast stream can bring a
// hundred KB in a frame, which parsed and drawn at once would freeze the page for hundreds of ms.
// A frame parses the HTML of renders up to PARSE_PER_FRAME characters (at least one render) and
// draws blocks up to DRAW_PER_FRAME characters of their text; the rest goes in at the next
// frames, before the open block and the raw text.
const PARSE_PER_FRAME = 32_000;
const DRAW_PER_FRAME = 12_000;

class TextBlock {
  constructor() {
    this.raw = "";
    this.settled = []; // the server's HTML of this text's finished blocks, as received
    this.open = ""; // ...and of its last block
    this.openNodes = [];
    this.node = el("div", { class: "answer-text" });
    this.rendered = el("div", { class: "markdown" });
    this.tailText = document.createTextNode("");
    this.tail = el("span", { class: "streaming-text" }, this.tailText);
    this.node.append(this.rendered, this.tail);
    // What came since the last frame, drawn once at the next one (a fast stream brings many
    // tokens and renders a frame): finished blocks, whether the open one changed, raw text.
    this.pending = { settled: [], open: false, tail: "" };
    this.waiting = []; // finished blocks not drawn yet (over a frame's share)
    this.whenDrawn = []; // called once everything received is on the page
    this.frame = 0;
  }

  append(text) {
    this.raw += text;
    this.pending.tail += text;
    this._schedule();
  }

  get settledHtml() {
    return this.settled.join("");
  }

  get html() {
    return this.settledHtml + this.open;
  }

  /** Is anything received not on the page yet? */
  get busy() {
    return this.frame !== 0 || this.waiting.length > 0 || this.pending.settled.length > 0;
  }

  /** A live render: the blocks it finished go after the others, its last block replaces the last
   * one, and the raw text it covers goes (at the next frame). */
  grow(settled, open) {
    if (settled) {
      this.settled.push(settled);
      this.pending.settled.push(settled);
    }
    this.open = open;
    this.pending.open = true;
    this.pending.tail = "";
    this.pending.cleared = true;
    this._schedule();
  }

  _schedule() {
    this.frame ||= requestAnimationFrame(() => this.flush());
  }

  /** Draw what came since the last frame. Finished blocks go in a group of their own that is
   * never touched again, which the browser skips while it is off-screen (`.blocks-done`); past a
   * frame's share they wait for the next frame, and the open block and raw text wait with them. */
  flush() {
    cancelAnimationFrame(this.frame);
    this.frame = 0;
    const { settled, open } = this.pending;
    if (open) {
      for (const node of this.openNodes) node.remove();
      this.openNodes = [];
    }
    let parsed = 0;
    while (settled.length && (!parsed || parsed + settled[0].length <= PARSE_PER_FRAME)) {
      const html = settled.shift();
      parsed += html.length;
      this.waiting.push(...fragment(html).childNodes);
    }
    if (this.waiting.length) {
      const group = el("div", { class: "blocks-done" });
      let size = 0;
      let count = 0;
      for (const node of this.waiting) {
        if (node.nodeType === Node.ELEMENT_NODE) size += node.textContent.length + 80; // a box costs its own
        count += 1;
        if (size >= DRAW_PER_FRAME) break;
      }
      group.append(...this.waiting.splice(0, count));
      this.rendered.append(group);
      this.onDraw?.(); // the view follows what a later frame draws too
    }
    if (this.waiting.length || settled.length) {
      this.frame = requestAnimationFrame(() => this.flush());
      return;
    }
    const { tail, cleared } = this.pending;
    if (this.pending.open) this._drawOpen(this.open);
    if (cleared) this.tailText.data = tail;
    else if (tail) this.tailText.appendData(tail);
    this.pending = { settled: [], open: false, tail: "" };
    for (const callback of this.whenDrawn.splice(0)) callback();
  }

  _drawOpen(open) {
    const nodes = fragment(open);
    this.openNodes = [...nodes.childNodes];
    this.rendered.append(nodes);
  }

  /** The final HTML, when it begins with the finished blocks received: only its rest is drawn
   * again (at the next frame, after what still waits). */
  finishWith(rest) {
    if (rest !== this.open || this.pending.open) {
      this.open = rest;
      this.pending.open = true;
    }
    this.clearTail();
  }

  setHtml(html) {
    cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.waiting = [];
    this.pending = { settled: [], open: false, tail: "" };
    setSanitizedHtml(this.rendered, html);
    decorateCode(this.rendered);
    this.settled = [html];
    this.open = "";
    this.openNodes = [];
    this.tailText.data = "";
    for (const callback of this.whenDrawn.splice(0)) callback();
  }

  /** The raw text goes at the next frame (the answer ended: its HTML covers it). */
  clearTail() {
    this.pending.tail = "";
    this.pending.cleared = true;
    this._schedule();
  }
}

function fragment(html) {
  const nodes = sanitizedFragment(html);
  decorateCode(nodes);
  return nodes;
}

export class Turn {
  constructor(view) {
    this.view = view;
    this.messageId = null;
    this.finished = false;
    this.texts = [];
    this.current = null; // the text block tokens go to; null after a tool card
    this.blocks = el("div", { class: "blocks" });
    this.footer = el("div", { class: "turn-footer" });
    this.node = el("article", { class: "msg assistant", "aria-busy": "true", "aria-label": "Assistant" },
      this.blocks, this.footer);
    this.activity = el("div", { class: "typing", "aria-hidden": "true" }, el("span"), el("span"), el("span"));
    this.blocks.append(this.activity);
  }

  token(text) {
    if (!this.current) {
      this.current = new TextBlock();
      this.current.onDraw = () => this.view.changed();
      this.texts.push(this.current);
      this.blocks.insertBefore(this.current.node, this.activity);
    }
    this.current.append(text);
    this.view.changed();
  }

  /** A stored answer's text: server-sanitized HTML, with its markdown kept for copying. */
  addHtml(html, raw = "") {
    const block = new TextBlock();
    block.raw = raw;
    block.setHtml(html || "");
    this.texts.push(block);
    this.addBlock(block.node);
  }

  /** The answer as its author wrote it (markdown), for copying. */
  plainText() {
    return this.texts.map((t) => t.raw.trim()).filter(Boolean).join("\n\n");
  }

  /** Tool cards, approvals and questions go here, after the text so far (and a background
   * task's result after the answer has finished). */
  addBlock(node) {
    this.current = null;
    this.blocks.insertBefore(node, this.activity.parentNode === this.blocks ? this.activity : null);
    this.view.changed();
  }

  /** A live render of the round now streaming: its text block is the one tokens go to. */
  render(event) {
    this.messageId ??= event.message_id;
    if (!this.current) return; // not this round's text (message_done brings the whole answer)
    this.current.grow(event.settled ?? "", event.open ?? "");
    this.view.changed();
  }

  _applyHtml(html, segments, final) {
    const written = this.texts.filter((t) => t.raw.trim());
    if (Array.isArray(segments) && segments.length === this.texts.length) {
      this.texts.forEach((block, i) => block.setHtml(segments[i] ?? ""));
      return;
    }
    if (final && written.length && this._finishLive(written, html)) return;
    if (written.length <= 1) {
      const target = written[0] || this.texts[this.texts.length - 1];
      if (target) target.setHtml(html);
      else if (final && html.trim()) {
        this.token("");
        this.current.setHtml(html);
      }
      return;
    }
    // The HTML covers several rounds' text and differs from their live renders:
    // the whole answer goes after the last tool card.
    if (!final) return;
    const last = written[written.length - 1];
    for (const block of written.slice(0, -1)) block.node.remove();
    last.setHtml(html);
  }

  /** The whole answer's HTML, when it begins with what the live renders drew (the usual case):
   * only the last block's rest is drawn again, not the whole answer. */
  _finishLive(written, html) {
    if (!written.some((block) => block.settled.length || block.open)) return false;
    const last = written[written.length - 1];
    const drawn = written.slice(0, -1).map((block) => block.html).join("") + last.settledHtml;
    if (!html.startsWith(drawn)) return false;
    for (const block of written.slice(0, -1)) block.clearTail();
    last.finishWith(html.slice(drawn.length));
    return true;
  }

  done(event) {
    this.messageId ??= event.message_id;
    this._applyHtml(this._wholeHtml(event), event.segments, true);
    this.finish(event.finish_reason);
    this.showUsage(event.usage);
  }

  /** The whole answer's HTML. The socket asks for `html_rest` (socket path `?html=rest`): a long
   * answer's message_done then brings only what follows the finished blocks its renders sent,
   * which this turn's one text block holds, not the whole answer again. */
  _wholeHtml(event) {
    if (typeof event.html_rest !== "string") return event.html || "";
    const rendered = this.texts.filter((block) => block.settled.length);
    if (rendered.length !== 1) console.warn("message_done: the renders it follows are not all here");
    return rendered.map((block) => block.settledHtml).join("") + event.html_rest;
  }

  /** The answer's token count (live from message_done, or stored with the answer). */
  showUsage(usage) {
    if (!usage?.total_tokens || this.footer.querySelector(".usage")) return;
    this.footer.append(el("span", { class: "usage muted small", text: `${usage.total_tokens.toLocaleString()} tokens` }));
  }

  /** The turn ended: marked as finished once all its text is on the page (a fast answer's last
   * blocks may still be going in, a frame's share at a time). */
  finish(reason, message) {
    if (this.finished) return;
    this.finished = true;
    const busy = this.texts.filter((block) => block.busy);
    let left = busy.length;
    if (!left) this._markFinished(reason, message);
    for (const block of busy) block.whenDrawn.push(() => { if (--left === 0) this._markFinished(reason, message); });
  }

  _markFinished(reason, message) {
    this.activity.remove();
    this.node.removeAttribute("aria-busy");
    this.node.dataset.finish = reason;
    const text = message || FINISH_NOTES[reason];
    if (text) this.footer.prepend(el("p", { class: `finish-note finish-${reason}`, role: "note", text }));
    this.view.changed();
  }

  error(event) {
    this.addBlock(errorBox(event));
  }

  /** A note from the server while the turn goes on (a retried model call, a trimmed
   * conversation); a later note with the same code replaces the earlier one. */
  notice(event) {
    const code = event.code || "notice";
    const old = [...this.blocks.querySelectorAll(".turn-notice")].find((node) => node.dataset.code === code);
    const node = el("p", { class: "turn-notice muted small", role: "status", dataset: { code }, text: event.message || "" });
    if (old) old.replaceWith(node);
    else this.addBlock(node);
    this.view.changed();
  }
}

export function errorBox(event) {
  const box = el("div", { class: "alert", role: "alert", dataset: { code: event.code || "error" } },
    el("strong", { text: "Error" }), " ", el("span", { class: "alert-message", text: event.message || "Something went wrong." }));
  if (event.action) box.append(el("p", { class: "alert-action", text: event.action }));
  return box;
}

export class ChatView {
  constructor(container, scroller, emptyState) {
    this.container = container;
    this.scroller = scroller;
    this.emptyState = emptyState;
  }

  changed() {
    this.scroller.changed();
  }

  _append(node) {
    this.emptyState.hidden = true;
    this.container.append(node);
    this.changed();
  }

  addUser(text, files = [], { scroll = true } = {}) {
    const node = el("article", { class: "msg user", "aria-label": "You" }, text ? el("div", { class: "bubble", text }) : null);
    if (files.length) {
      node.append(el("ul", { class: "chips", "aria-label": "Attached files" },
        files.map((f) => el("li", { class: "chip", title: f.mime }, el("span", { class: "chip-name", text: f.name }),
          el("span", { class: "chip-meta", text: formatBytes(f.size) })))));
    }
    this._append(node);
    if (scroll) this.scroller.toBottom();
    return node;
  }

  startTurn() {
    const turn = new Turn(this);
    this._append(turn.node);
    return turn;
  }

  notice(text, kind = "info") {
    this._append(el("p", { class: `notice notice-${kind}`, role: "status", text }));
  }

  error(event) {
    this._append(errorBox(event));
  }

  get isEmpty() {
    return !this.container.querySelector(".msg");
  }

  clear() {
    for (const node of [...this.container.children]) if (node !== this.emptyState) node.remove();
    this.emptyState.hidden = false;
    this.scroller.toBottom();
  }
}
