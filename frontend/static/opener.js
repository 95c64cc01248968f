// Which conversation the page shows: open a stored one (sidebar, `?c=<id>`,
// back/forward), start a new or incognito one, follow the server's
// `conversation` announcements, and re-attach to a running turn after a
// load, reload or reconnect.  The URL follows the open conversation.

import { el, randomId } from "./dom.js";

const LEVEL_RESTART = "the compliance level changed, and the earlier messages ran at a level that is not allowed with the new one";

function idFromUrl() {
  return new URL(location.href).searchParams.get("c") || null;
}

function setUrl(id, push) {
  const url = new URL(location.href);
  if (id) url.searchParams.set("c", id);
  else url.searchParams.delete("c");
  if (url.href === location.href) return;
  history[push ? "pushState" : "replaceState"](null, "", url);
}

/** The list's view of a conversation (GET answers carry its messages too). */
function summary(conv) {
  const { messages, ...rest } = conv;
  return rest;
}

export class Opener {
  constructor(deps) {
    Object.assign(this, deps);
    this.loadSeq = 0; // answers for a conversation no longer open are dropped
    this.attachSent = false;
    this.unfinished = null; // the entry whose stored answer had not finished when drawn
    this.pending = null; // the level and model to put back once the pickers have their options
  }

  start() {
    window.addEventListener("popstate", () => this._followUrl());
    // Conversations started or renamed in another tab show up when this one is looked at again.
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible") this.sidebar.refresh();
    });
    this.sidebar.refresh();
    const id = idFromUrl();
    if (id) this.open(id, { push: false });
  }

  _followUrl() {
    const id = idFromUrl();
    if (id && (id !== this.state.conversationId || !this.state.stored)) this.open(id, { push: false });
    else if (!id && (this.state.stored || this.thread.entries.length)) this.newChat({ push: false });
  }

  /** Leave the running turn (its remaining events are dropped) and empty the page. */
  _reset() {
    const { state } = this;
    if (state.running && this.connection.send({ type: "cancel" })) state.staleTurn = true;
    state.turn = null;
    state.entry = null;
    state.running = false;
    this.unfinished = null;
    this.attachSent = false;
    state.sendWhenReady = false;
    this.thread.clear();
    this.cards.clear();
    this.canvas.clear();
    this.uploads.clear();
    this.library.clear();
  }

  newChat({ push }) {
    this._reset();
    this.onNewChat?.(); // the pickers go back to the configuration's defaults
    this.loadSeq += 1;
    Object.assign(this.state, { conversationId: randomId(), stored: false, level: null, loading: false, incognitoState: null });
    this.pending = null;
    setUrl(null, push);
    this.sidebar.setActive(null);
    this.showTitle(null);
    this.updateControls();
    this.input.focus();
  }

  setIncognito(on) {
    this.state.incognito = on;
    document.body.dataset.incognito = on ? "on" : "off";
    this.banner.hidden = !on;
    this.input.placeholder = on ? "Ask anything (incognito: not saved)…" : "Ask anything…";
    this.sidebar.setIncognito(on);
    this.newChat({ push: this.state.stored });
  }

  async open(id, { push }) {
    this._reset();
    const seq = ++this.loadSeq;
    if (this.state.incognito) {
      this.state.incognito = false;
      document.body.dataset.incognito = "off";
      this.banner.hidden = true;
      this.input.placeholder = "Ask anything…";
      this.sidebar.setIncognito(false);
    }
    Object.assign(this.state, { conversationId: id, stored: true, loading: true });
    setUrl(id, push);
    this.sidebar.setActive(id);
    this.updateControls();
    let conv;
    try {
      conv = await this.api.get(id);
    } catch (exc) {
      if (seq !== this.loadSeq) return;
      this.state.loading = false;
      if (exc.status === 404) {
        this.newChat({ push: false });
        this.view.error({ code: "not_found", message: "That conversation was not found: it was deleted, or it is not yours.",
          action: "Pick one from the list, or start a new chat." });
      } else {
        this.view.error({ code: exc.code, message: `Could not open the conversation: ${exc.message}`,
          action: exc.action || "Reload the page to try again." });
        this.updateControls();
      }
      return;
    }
    if (seq !== this.loadSeq) return;
    this._show(conv);
    this.attach();
  }

  _show(conv) {
    this.state.loading = false;
    this.unfinished = this.thread.render(conv);
    this.state.level = conv.compliance_level ?? null;
    this.pending = { level: this.state.level ?? "", model: conv.model || null };
    this.configLoaded();
    this.showTitle(conv.title);
    this.updateControls();
  }

  /** The page of messages before those shown, drawn above them; the reader stays where they were. */
  async showEarlier() {
    const { shown } = this.thread;
    const id = this.state.conversationId;
    if (!shown?.has_more || !shown.messages.length) return;
    const seq = this.loadSeq;
    let older;
    try {
      older = await this.api.older(id, shown.messages[0].id);
    } catch (exc) {
      this.view.error({ code: exc.code, message: `Could not read the earlier messages: ${exc.message}`, action: exc.action });
      return;
    }
    if (seq !== this.loadSeq || this.thread.shown !== shown || this.state.running) return;
    this.thread.showOlder(older);
  }

  /** Put the conversation's level and model back in the pickers (their options come with the config). */
  configLoaded() {
    const want = this.pending;
    if (!want) return;
    const { level, model } = this.selects;
    if (want.level !== null && [...level.options].some((o) => o.value === want.level)) {
      if (level.value !== want.level) {
        level.value = want.level;
        level.dispatchEvent(new Event("change"));
      }
      want.level = null;
    }
    if (want.model && [...model.options].some((o) => o.value === want.model && !o.disabled)) {
      if (model.value !== want.model) {
        model.value = want.model;
        model.dispatchEvent(new Event("change"));
      }
      want.model = null;
    }
    if (want.level === null && !want.model) this.pending = null;
  }

  showTitle(title) {
    document.title = title ? `${title} · Switchboard` : "Switchboard";
  }

  // -- the socket ------------------------------------------------------------
  /** A `session` arrived: the first connection, or a new one after the old one dropped. */
  connected(reconnected) {
    this.attachSent = false;
    if (reconnected) this.sidebar.refresh();
    if (reconnected && (this.state.stored || this.state.unacked) && !this.state.loading) {
      this._reload();
      return;
    }
    if (reconnected && this.thread.entries.length) {
      this.view.notice("Reconnected.");
    }
    this.attach();
  }

  /** After a reconnect: what happened meanwhile is in the store; then join the turn if it still runs. */
  async _reload() {
    const seq = ++this.loadSeq;
    this.state.loading = true;
    this.updateControls();
    let conv;
    try {
      conv = await this.api.get(this.state.conversationId);
    } catch (exc) {
      if (seq !== this.loadSeq) return;
      this.state.loading = false;
      if (exc.status === 404 && this.state.unacked && !this.state.stored) {
        this._resendIfLost(null); // the first message of a chat no process took
        this.updateControls();
        this._ready();
        return;
      }
      this.view.error({ code: exc.code, message: `Could not reload the conversation: ${exc.message}`, action: exc.action });
      this.updateControls();
      this._ready();
      return;
    }
    if (seq !== this.loadSeq) return;
    this.cards.clear();
    this.state.stored = true;
    this._show(conv);
    this.view.notice("Reconnected.");
    this._resendIfLost(conv);
    this.attach();
  }

  /** The chat sent as the line dropped: stored (its turn is attached or settled), or sent again. */
  _resendIfLost(conv) {
    const lost = this.state.unacked;
    this.state.unacked = null;
    if (!lost || lost.conversationId !== this.state.conversationId) return;
    if (!conv?.messages?.some((m) => m.role === "user" && m.content === lost.text)) this.requeue(lost.text);
  }

  attach() {
    const { state } = this;
    if (!state.stored || state.loading || this.attachSent || !this.connection.open) {
      if (!state.loading) this._ready();
      return;
    }
    this.attachSent = this.connection.send({ type: "attach", conversation_id: state.conversationId });
    if (!this.attachSent) this._ready();
  }

  /** A message typed while the conversation was being drawn goes out now (no turn runs). */
  _ready() {
    const { state } = this;
    if (!state.sendWhenReady || state.loading || state.running) return;
    this.sendQueued();
  }

  /** The answer to `attach`: a running turn's events follow; else settle an answer left unfinished. */
  attached(event) {
    const { state } = this;
    if (event.conversation_id !== state.conversationId || state.running) return;
    const entry = this.unfinished;
    this.unfinished = null;
    if (event.running) {
      // The server now sends this turn's events only: nothing of a cancelled one follows.
      state.staleTurn = false;
      const target = entry || this.thread.last;
      this.thread.dropAnswer(target);
      this.beginTurn(target);
    } else if (entry) {
      this._settle(entry);
    }
    this._ready();
  }

  /** The turn ended between our fetch and the attach, or never will (the server stopped): find out which. */
  async _settle(entry) {
    const id = this.state.conversationId;
    const seq = this.loadSeq;
    let conv = null;
    try {
      conv = await this.api.get(id);
    } catch {
      conv = null;
    }
    if (seq !== this.loadSeq || this.state.running) return;
    if (conv && !this.thread.render(conv)) return;
    const last = this.thread.last || entry;
    const turn = last.turn || this.thread.startTurn(last);
    turn.finish("error", "This answer did not finish: the server stopped before it was done. Regenerate it to try again.");
    this.thread.refreshActions();
  }

  // -- the turn --------------------------------------------------------------
  /** `conversation`: the turn stored a new conversation (the first message, or a level change). */
  announced(event) {
    const { state } = this;
    const from = state.turnFrom;
    const id = event.conversation_id;
    if (from && id !== from && state.entry && this.thread.entries.length > 1) {
      // The server's reason is a whole sentence ("…, so a new conversation was started.").
      const why = event.reason || `Started a new conversation because ${LEVEL_RESTART}.`;
      const note = el("p", { class: "notice notice-restart", role: "status" }, `${why} The earlier one is still in the list.`);
      this.thread.restartWith(state.entry, note);
    }
    state.conversationId = id;
    if (state.incognito) return;
    state.stored = true;
    setUrl(id, false);
    this.sidebar.upsert({ id, title: event.title || "New conversation", updated_at: new Date().toISOString(),
      compliance_level: state.level });
    this.sidebar.setActive(id);
    this.showTitle(event.title);
  }

  /** After message_done: the branch controls and ids from the store, and the list's order. */
  async turnDone(event) {
    const { state } = this;
    if (state.incognito) return;
    if (!state.stored && event.conversation_id) {
      state.conversationId = event.conversation_id;
      state.stored = true;
      setUrl(state.conversationId, false);
    }
    if (!state.stored) return;
    const id = state.conversationId;
    let conv;
    try {
      conv = await this.api.get(id);
    } catch {
      return;
    }
    if (id !== state.conversationId) return;
    this.sidebar.upsert(summary(conv));
    this.sidebar.setActive(id);
    this.showTitle(conv.title);
    if (!state.running) this.thread.annotate(conv);
  }

  async switchBranch(messageId) {
    const id = this.state.conversationId;
    let conv;
    try {
      conv = await this.api.branch(id, messageId);
    } catch (exc) {
      this.view.error({ code: exc.code, message: `Could not switch to that version: ${exc.message}`, action: exc.action });
      return;
    }
    if (id !== this.state.conversationId || this.state.running) return;
    this.cards.clear();
    this._show(conv);
    this.sidebar.upsert(summary(conv));
  }
}
