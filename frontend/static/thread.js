// The open conversation as entries (a user message and the answer to it),
// drawn from the stored messages or live, each with its actions: copy, edit
// (user), regenerate (the last answer) and "‹ 1/2 ›" to switch branches.

import { appTitle } from "./appviews.js";
import { copyText, el } from "./dom.js";
import { ToolCard } from "./toolcards.js";

const COPY_RESET_MS = 1500;

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
   * onOpenApp(callId, tool), onStoredApp(callId, tool)} */
  constructor(view, actions) {
    this.view = view;
    this.actions = actions;
    this.entries = [];
  }

  get last() {
    return this.entries[this.entries.length - 1];
  }

  clear() {
    this.entries = [];
    this.shown = null; // the stored conversation drawn: its messages, and `has_more` when older ones exist
    this.view.clear();
  }

  // -- live ------------------------------------------------------------------
  addUser(text, files = []) {
    const entry = { userId: null, text, userNode: this.view.addUser(text, files, { scroll: !this.drawing }), turn: null, answerId: null };
    entry.userActions = this._userActions(entry);
    entry.userNode.append(entry.userActions);
    this.entries.push(entry);
    this.refreshActions();
    return entry;
  }

  /** A fresh answer for an entry (the last one when not given). */
  startTurn(entry = this.last) {
    const turn = this.view.startTurn();
    if (entry) {
      entry.turn = turn;
      entry.answerId = null;
      entry.turnActions = this._turnActions(entry);
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
    first?.before(note);
  }

  // -- stored ----------------------------------------------------------------
  /** Draw a stored conversation; returns the last entry when its answer has not finished. */
  /** Draw a stored conversation (a page of it: older messages are drawn when the reader asks, above
   *  the rest); `keep`: put the scroll position back instead of showing the newest. */
  render(conversation, { keep = null } = {}) {
    this.clear();
    this.shown = conversation;
    this.drawing = true;
    try {
      this._drawAll(conversation);
    } finally {
      this.drawing = false;
    }
    if (conversation.has_more) this.view.container.prepend(this._earlier());
    if (keep) keep();
    else this.view.scroller.toBottom();
    this.refreshActions();
    const last = this.last;
    return last && !this._finished(last) ? last : null;
  }

  _drawAll(conversation) {
    for (const stored of entriesOf(conversation.messages)) {
      let entry;
      if (stored.user) {
        entry = this.addUser(stored.user.content || "", stored.user.files || []);
      } else {
        entry = { userId: null, userNode: null, turn: null, answerId: null };
        this.entries.push(entry);
      }
      if (stored.answer.length) this._drawAnswer(entry, stored.answer);
      this._applyIds(entry, stored);
    }
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
    const offset = this.entries.length - stored.length;
    if (offset < 0 || (offset > 0 && !conversation.has_more)) return false;
    stored.forEach((s, i) => this._applyIds(this.entries[offset + i], s));
    this.refreshActions();
    return true;
  }

  _finished(entry) {
    return Boolean(entry.turn?.finished);
  }

  _drawAnswer(entry, messages) {
    const turn = this.startTurn(entry);
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
        turn.addBlock(this._storedCard(message, calls.get(message.call_id)).node);
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

  _storedCard(message, call) {
    const card = new ToolCard({ callId: message.call_id, tool: message.tool || call?.name, server: message.server,
      onOpenArtifact: this.actions.onOpenArtifact, onOpenApp: this.actions.onOpenApp });
    card.setArguments(parseArgs(message.arguments ?? call?.arguments));
    card.finish(message);
    if (message.app) this.actions.onStoredApp?.(message.call_id, appTitle(message.tool || call?.name, message.server, card.arguments));
    return card;
  }

  _applyIds(entry, stored) {
    if (stored.user && entry.userNode) {
      entry.userId = stored.user.id;
      entry.userNode.dataset.messageId = stored.user.id;
      this._branchControl(entry.userActions, stored.user);
    }
    const first = stored.answer[0];
    if (first && entry.turn) {
      entry.answerId = first.id;
      entry.turn.node.dataset.messageId = first.turn || first.id;
      this._branchControl(entry.turnActions, first);
    }
  }

  // -- actions ---------------------------------------------------------------
  refreshActions() {
    if (this.drawing) return; // once, at the end of render()
    const may = this.actions.canAct();
    const earlier = this.view.container.querySelector(".earlier-btn");
    if (earlier) earlier.disabled = !may;
    this.entries.forEach((entry, i) => {
      const lastOne = i === this.entries.length - 1;
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

  _copyButton(label, text) {
    const button = el("button", { type: "button", class: "msg-action copy-msg", "aria-label": label, title: label, text: "Copy" });
    button.addEventListener("click", async () => {
      const ok = await copyText(text());
      button.textContent = ok ? "Copied" : "Copy failed";
      setTimeout(() => { button.textContent = "Copy"; }, COPY_RESET_MS);
    });
    return button;
  }

  _userActions(entry) {
    const edit = el("button", { type: "button", class: "msg-action edit-btn", "aria-label": "Edit message", title: "Edit message", text: "Edit" });
    edit.addEventListener("click", () => this._startEdit(entry));
    return el("div", { class: "msg-actions" }, this._copyButton("Copy message", () => entry.text), edit);
  }

  _turnActions(entry) {
    const regen = el("button", { type: "button", class: "msg-action regen-btn", "aria-label": "Regenerate answer",
      title: "Answer this message again (the current answer is kept as a version)", text: "Regenerate", hidden: true });
    regen.addEventListener("click", () => this.actions.canAct() && this.actions.onRegenerate(entry));
    return el("div", { class: "msg-actions" }, this._copyButton("Copy answer", () => entry.turn?.plainText() || ""), regen);
  }

  /** "‹ 2/3 ›" when the message has other versions. */
  _branchControl(actions, message) {
    actions?.querySelector(".branch")?.remove();
    const siblings = message.siblings || [];
    if (!actions || siblings.length < 2) return;
    const at = siblings.indexOf(message.id);
    const step = (delta, label, text) => {
      const target = siblings[at + delta] ?? "";
      const button = el("button", { type: "button", class: "msg-action", "aria-label": label, title: label, text, dataset: { target } });
      button.disabled = !target;
      button.addEventListener("click", () => target && this.actions.canAct() && this.actions.onBranch(target));
      return button;
    };
    actions.prepend(el("span", { class: "branch", role: "group", "aria-label": "Versions" },
      step(-1, "Previous version", "‹"), el("span", { class: "branch-pos", text: `${at + 1}/${siblings.length}` }),
      step(1, "Next version", "›")));
  }

  _startEdit(entry) {
    if (!this.actions.canAct() || !entry.userNode || entry.userNode.querySelector(".edit-form")) return;
    const bubble = entry.userNode.querySelector(".bubble");
    const box = el("textarea", { class: "edit-box", "aria-label": "Edit your message", rows: "3" });
    box.value = entry.text;
    const cancel = el("button", { type: "button", class: "btn", text: "Cancel" });
    const form = el("form", { class: "edit-form" }, box,
      el("div", { class: "actions" }, el("button", { type: "submit", class: "btn primary", text: "Send" }), cancel));
    const close = () => {
      form.remove();
      if (bubble) bubble.hidden = false;
      entry.userActions.hidden = false;
    };
    cancel.addEventListener("click", close);
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const text = box.value.trim();
      if (!text || !this.actions.canAct()) return;
      close();
      this.actions.onEdit(entry, text);
    });
    box.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        form.requestSubmit();
      } else if (e.key === "Escape") {
        e.stopPropagation();
        close();
      }
    });
    if (bubble) bubble.hidden = true; // a message of files only has no text bubble
    entry.userActions.hidden = true;
    entry.userNode.prepend(form);
    box.focus();
  }
}
