// The open conversation as entries (a user message and the answer to it),
// drawn from the stored messages or live, each with its actions (entryactions.js).
// A stored conversation's newest messages are drawn at once, the older ones above
// them in slices (slices.js), so opening a long one never holds the page for long.

import { appTitle } from "./appviews.js";
import { el } from "./dom.js";
import { branchControl, turnActions, userActions } from "./entryactions.js";
import { ChatView } from "./messages.js";
import { inSlices } from "./slices.js";
import { ToolCard } from "./toolcards.js";

const FIRST_MESSAGES = 24; // drawn at once when a conversation opens (more than a screen holds); the rest in slices

function parseArgs(value) {
  if (value && typeof value === "object") return value;
  try {
    return JSON.parse(value || "{}");
  } catch {
    return { arguments: String(value) };
  }
}

/** Stored messages of the active branch, cut into entries: {user, answer: [...]}. */
export function entriesOf(messages) {
  const entries = [];
  for (const message of messages || []) {
    if (message.role === "user" || !entries.length) entries.push({ user: null, answer: [] });
    const entry = entries[entries.length - 1];
    if (message.role === "user") entry.user = message;
    else entry.answer.push(message);
  }
  return entries;
}

export class Thread {
  /** `actions`: {onEdit(entry, text), onRegenerate(entry), onBranch(messageId), onEarlier(), canAct(), onOpenArtifact(a),
   * onOpenApp(callId, tool), onStoredApp(callId, tool, {older})} */
  constructor(view, actions) {
    this.view = view;
    this.actions = actions;
    this.entries = [];
    this.generation = 0; // slices of a drawing that is no longer wanted stop
  }

  get last() {
    return this.entries[this.entries.length - 1];
  }

  clear() {
    this.entries = [];
    this.shown = null; // the stored conversation drawn: its messages, and `has_more` when older ones exist
    this._stopFilling();
    this.view.clear();
  }

  // -- live ------------------------------------------------------------------
  addUser(text, files = []) {
    const entry = { userId: null, text, userNode: this.view.addUser(text, files, { scroll: !this.drawing }), turn: null, answerId: null };
    entry.userActions = userActions(entry, this.actions);
    entry.userNode.append(entry.userActions);
    this.entries.push(entry);
    this.refreshActions();
    return entry;
  }

  /** A fresh answer for an entry (the last one when not given). */
  startTurn(entry = this.last, view = this.view) {
    const turn = view.startTurn();
    if (entry) {
      entry.turn = turn;
      entry.answerId = null;
      entry.turnActions = turnActions(entry, this.actions);
      turn.footer.append(entry.turnActions);
    }
    this.refreshActions();
    return turn;
  }

  /** Drop an entry's answer (regenerate, or a running turn about to be replayed). */
  dropAnswer(entry) {
    entry?.turn?.node.remove();
    if (entry) entry.turn = null;
  }

  /** Remove an entry and every one after it (an edit replaces them). */
  truncateFrom(entry) {
    const at = this.entries.indexOf(entry);
    if (at < 0) return;
    const first = entry.userNode || entry.turn?.node;
    // Notices and errors after it belong to the replaced part too.
    let node = first;
    while (node) {
      const next = node.nextElementSibling;
      if (node.id !== "empty-state") node.remove();
      node = next;
    }
    this.entries.splice(at);
  }

  /** What message_done says about the entry it finishes. */
  answered(entry, event) {
    if (entry && event.user_message_id) {
      entry.userId = event.user_message_id;
      if (entry.userNode) entry.userNode.dataset.messageId = event.user_message_id;
    }
    this.refreshActions();
  }

  /** A new conversation took over (the level changed): only `entry` stays, after a note saying why. */
  restartWith(entry, note) {
    const at = this.entries.indexOf(entry);
    const first = entry.userNode || entry.turn?.node;
    for (const node of [...this.view.container.children]) {
      if (node === first) break;
      if (node.id !== "empty-state") node.remove();
    }
    if (at > 0) this.entries.splice(0, at);
    this._stopFilling(); // what is not drawn yet belongs to the old conversation too
    first?.before(note);
  }

  // -- stored ----------------------------------------------------------------
  /** Draw a stored conversation (a page of it: older messages are drawn when the reader asks, above
   *  the rest): its newest messages at once, then the others above them in slices (the page stays
   *  free, the reader where they are); returns the last entry when its answer has not finished. */
  render(conversation) {
    this.clear();
    this.shown = conversation;
    const stored = entriesOf(conversation.messages);
    let at = stored.length;
    for (let count = 0; at > 0 && count < FIRST_MESSAGES; ) count += this._size(stored[--at]);
    this.drawing = true;
    try {
      for (const s of stored.slice(at)) this.entries.push(this._storedEntry(s, this.view));
    } finally {
      this.drawing = false;
    }
    this.view.scroller.toBottom();
    this.refreshActions();
    this._fillAbove(stored.slice(0, at), conversation);
    const last = this.last;
    return last && !this._finished(last) ? last : null;
  }

  /** The page before the one shown (`older`), drawn above it in slices; the reader stays where they are. */
  showOlder(older) {
    const shown = this.shown;
    const merged = { ...shown, messages: [...older.messages, ...shown.messages], has_more: older.has_more };
    const all = entriesOf(merged.messages);
    const first = this.entries[0];
    const cut = Boolean(first && !first.userNode && older.messages.length); // the shown page began inside an answer
    const kept = entriesOf(shown.messages).length - (cut ? 1 : 0);
    this.shown = merged;
    // That answer is drawn again whole, with its question, in the first slice (the reader's place held).
    this._fillAbove(all.slice(0, all.length - kept), merged, cut ? () => this._dropFirst() : null);
  }

  _dropFirst() {
    const first = this.entries.shift();
    first?.turn?.node.remove();
  }

  /** Draw `rest` (stored entries older than those drawn) above the drawn ones, newest first, in slices.
   *  The container is `aria-busy` meanwhile, and "Show earlier messages" disabled. */
  _fillAbove(rest, conversation, before = null) {
    const generation = ++this.generation;
    const box = this.view.container;
    const live = () => generation === this.generation;
    const done = () => {
      this.filling = false;
      box.removeAttribute("aria-busy");
      const earlier = box.querySelector(".earlier");
      if (Boolean(earlier) !== Boolean(conversation.has_more)) {
        const fromBottom = box.scrollHeight - box.scrollTop;
        if (earlier) earlier.remove();
        else box.prepend(this._earlier());
        this.view.scroller.hold(fromBottom);
      }
      this.refreshActions();
    };
    if (!rest.length && !before) return done();
    this.filling = true;
    box.setAttribute("aria-busy", "true");
    // Slices are drawn aside (nothing scrolls or shows "Newest" meanwhile), then moved in at the top.
    const aside = new ChatView(el("div"), { changed() {}, toBottom() {} }, el("div"));
    inSlices((until) => {
      const fromBottom = box.scrollHeight - box.scrollTop;
      const slice = document.createDocumentFragment();
      const drawn = [];
      this.drawing = true;
      try {
        before?.();
        before = null;
        while (rest.length) {
          drawn.unshift(this._storedEntry(rest.pop(), aside, { older: true }));
          slice.prepend(...aside.container.childNodes);
          if (performance.now() > until) break;
        }
      } finally {
        this.drawing = false;
      }
      this.view.emptyState.after(slice); // the empty state stays first, above every message
      this.entries.unshift(...drawn);
      this.view.scroller.hold(fromBottom);
      this.refreshActions(drawn);
      return !rest.length;
    }, live).then((all) => all && live() && done());
  }

  _stopFilling() {
    this.generation += 1;
    this.filling = false;
    this.view.container.removeAttribute("aria-busy");
  }

  _size(stored) {
    return (stored.user ? 1 : 0) + stored.answer.length;
  }

  /** An entry of the stored conversation, drawn at the end of `view`. */
  _storedEntry(stored, view, { older = false } = {}) {
    const entry = { userId: null, userNode: null, turn: null, answerId: null, text: stored.user?.content || "" };
    if (stored.user) {
      entry.userNode = view.addUser(entry.text, stored.user.files || [], { scroll: false });
      entry.userActions = userActions(entry, this.actions);
      entry.userNode.append(entry.userActions);
    }
    if (stored.answer.length) this._drawAnswer(entry, stored.answer, view, older);
    this._applyIds(entry, stored);
    return entry;
  }

  _earlier() {
    const button = el("button", { type: "button", class: "btn earlier-btn", text: "Show earlier messages" });
    button.addEventListener("click", () => {
      if (this.actions.canAct()) this.actions.onEarlier();
    });
    return el("div", { class: "earlier" }, button);
  }

  /** After a turn: ids and branch controls from the stored conversation (its newest page), matched
   *  to the view's newest entries, when it matches the view. */
  annotate(conversation) {
    let stored = entriesOf(conversation.messages);
    if (conversation.has_more && stored.length && !stored[0].user) stored = stored.slice(1); // cut by the page
    let offset = this.entries.length - stored.length;
    if (offset < 0 && this.filling) {
      stored = stored.slice(-offset); // older messages still going in: the view holds the newest only
      offset = 0;
    }
    if (offset < 0 || (offset > 0 && !conversation.has_more)) return false;
    stored.forEach((s, i) => this._applyIds(this.entries[offset + i], s));
    this.refreshActions();
    return true;
  }

  _finished(entry) {
    return Boolean(entry.turn?.finished);
  }

  _drawAnswer(entry, messages, view = this.view, older = false) {
    const turn = this.startTurn(entry, view);
    const calls = new Map();
    const answered = new Set();
    let finish = null;
    let last = null; // the message that finished the answer: its usage and error
    for (const message of messages) {
      if (message.role === "assistant") {
        if ((message.content || "").trim() || (message.html || "").trim()) turn.addHtml(message.html || "", message.content || "");
        for (const call of message.tool_calls || []) calls.set(call.id, call);
        if (message.finish_reason) {
          finish = message.finish_reason;
          last = message;
        }
      } else if (message.role === "tool") {
        answered.add(message.call_id);
        turn.addBlock(this._storedCard(message, calls.get(message.call_id), older).node);
      }
    }
    if (!finish) return;
    for (const [id, call] of calls) {
      if (answered.has(id)) continue;
      const card = new ToolCard({ callId: id, tool: call.name, server: "", onOpenArtifact: this.actions.onOpenArtifact });
      card.setArguments(parseArgs(call.arguments));
      card.abandon(finish === "cancelled" ? "Cancelled" : "Did not finish");
      turn.addBlock(card.node);
    }
    if (last.error) turn.error(last.error);
    turn.finish(finish);
    turn.showUsage(last.usage);
  }

  _storedCard(message, call, older) {
    const card = new ToolCard({ callId: message.call_id, tool: message.tool || call?.name, server: message.server,
      onOpenArtifact: this.actions.onOpenArtifact, onOpenApp: this.actions.onOpenApp });
    card.setArguments(parseArgs(message.arguments ?? call?.arguments));
    card.finish(message);
    if (message.app) this.actions.onStoredApp?.(message.call_id, appTitle(message.tool || call?.name, message.server, card.arguments), { older });
    return card;
  }

  _applyIds(entry, stored) {
    if (stored.user && entry.userNode) {
      entry.userId = stored.user.id;
      entry.userNode.dataset.messageId = stored.user.id;
      branchControl(entry.userActions, stored.user, this.actions);
    }
    const first = stored.answer[0];
    if (first && entry.turn) {
      entry.answerId = first.id;
      entry.turn.node.dataset.messageId = first.turn || first.id;
      branchControl(entry.turnActions, first, this.actions);
    }
  }

  // -- actions ---------------------------------------------------------------
  /** The actions' state (`entries`: only theirs, as a slice goes in). */
  refreshActions(entries = this.entries) {
    if (this.drawing) return; // once the entries being drawn are in
    const may = this.actions.canAct();
    const earlier = this.view.container.querySelector(".earlier-btn");
    if (earlier) earlier.disabled = !may || this.filling;
    entries.forEach((entry) => {
      const lastOne = entry === this.last;
      const edit = entry.userActions?.querySelector(".edit-btn");
      if (edit) {
        edit.hidden = !entry.userId;
        edit.disabled = !may;
      }
      const regen = entry.turnActions?.querySelector(".regen-btn");
      if (regen) {
        regen.hidden = !lastOne || !entry.turn?.finished || !entry.userId;
        regen.disabled = !may;
      }
      for (const b of [entry.userActions, entry.turnActions]) {
        for (const step of b?.querySelectorAll(".branch button") || []) step.disabled = !may || step.dataset.target === "";
      }
    });
  }
}
