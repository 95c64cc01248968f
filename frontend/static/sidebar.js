// The conversations sidebar: the user's stored conversations newest first,
// grouped by day, with search, "New chat", rename, delete, export and the
// incognito switch.  On narrow screens it is a drawer.  Titles are text only.

import { el } from "./dom.js";

const PAGE_SIZE = 50;
const SEARCH_DELAY_MS = 250;
const NARROW = window.matchMedia("(max-width: 899px)");
const DAY_MS = 86_400_000;
const OPEN_KEY = "switchboard.sidebar";

/** "Today", "Yesterday", "Previous 7 days", then one group per month. */
export function dayGroup(iso, now = new Date()) {
  const when = new Date(iso);
  if (Number.isNaN(when.getTime())) return "Older";
  const today = new Date(now.getFullYear(), now.getMonth(), now.getDate()).getTime();
  const t = when.getTime();
  if (t >= today) return "Today";
  if (t >= today - DAY_MS) return "Yesterday";
  if (t >= today - 7 * DAY_MS) return "Previous 7 days";
  return when.toLocaleDateString(undefined, { month: "long", year: "numeric" });
}

export class Sidebar {
  constructor({ api, root, list, search, more, status, newChat, incognito, toggle, close, scrim, topNewChat,
    onOpen, onNew, onDeleted, onRenamed, onIncognito }) {
    Object.assign(this, { api, root, list, search, more, status, incognito, toggle, scrim,
      onOpen, onNew, onDeleted, onRenamed, onIncognito });
    this.items = []; // conversations shown, newest first
    this.activeId = null;
    this.seq = 0; // answers to older requests are dropped
    this.complete = true;
    this.searchTimer = 0;

    search.addEventListener("input", () => {
      clearTimeout(this.searchTimer);
      this.searchTimer = setTimeout(() => this.refresh(), SEARCH_DELAY_MS);
    });
    search.addEventListener("keydown", (e) => {
      if (e.key === "Escape" && search.value) {
        e.stopPropagation();
        search.value = "";
        this.refresh();
      }
    });
    more.addEventListener("click", () => this._loadMore());
    for (const button of [newChat, topNewChat]) button?.addEventListener("click", () => {
      this._closeDrawer();
      this.onNew();
    });
    incognito.addEventListener("change", () => this.onIncognito(incognito.checked));
    toggle.addEventListener("click", () => {
      const open = document.body.dataset.sidebar !== "open";
      this.setOpen(open, { focus: NARROW.matches });
      if (!NARROW.matches) this._remember(open);
    });
    close.addEventListener("click", () => this.setOpen(false, { focus: true }));
    scrim.addEventListener("click", () => this.setOpen(false));
    document.addEventListener("keydown", (e) => {
      if (e.key !== "Escape") return;
      if (this._closeMenus()) return;
      if (NARROW.matches && document.body.dataset.sidebar === "open") this.setOpen(false, { focus: true });
    });
    document.addEventListener("click", (e) => {
      if (!e.target.closest?.(".conv-menu-wrap")) this._closeMenus();
    });
    this.setOpen(!NARROW.matches && this._remembered());
    NARROW.addEventListener("change", () => this.setOpen(!NARROW.matches && this._remembered()));
  }

  /** On wide screens the sidebar stays as the user left it. */
  _remembered() {
    try {
      return localStorage.getItem(OPEN_KEY) !== "closed";
    } catch {
      return true;
    }
  }

  _remember(open) {
    try {
      localStorage.setItem(OPEN_KEY, open ? "open" : "closed");
    } catch {
      // storage may be off: the sidebar just opens again next time
    }
  }

  get query() {
    return this.search.value.trim();
  }

  setOpen(open, { focus = false } = {}) {
    document.body.dataset.sidebar = open ? "open" : "closed";
    this.toggle.setAttribute("aria-expanded", String(open));
    this.toggle.title = open ? "Hide conversations" : "Show conversations";
    this.scrim.hidden = !(open && NARROW.matches);
    if (focus && open) this.search.focus();
    if (focus && !open) this.toggle.focus();
  }

  /** The canvas takes room: on medium screens the sidebar steps aside. */
  canvasVisible(open) {
    if (open && !NARROW.matches && window.innerWidth < 1200) this.setOpen(false);
  }

  _closeDrawer() {
    if (NARROW.matches) this.setOpen(false);
  }

  setIncognito(on) {
    this.incognito.checked = on;
  }

  setActive(id) {
    this.activeId = id;
    for (const node of this.list.querySelectorAll(".conv")) {
      if (node.dataset.id === id) node.setAttribute("aria-current", "page");
      else node.removeAttribute("aria-current");
    }
  }

  async refresh() {
    const seq = ++this.seq;
    const q = this.query;
    let answer;
    try {
      answer = await this.api.list({ q, limit: PAGE_SIZE });
    } catch (exc) {
      if (seq === this.seq) this._problem(`Could not load your conversations: ${exc.message}`, exc.action);
      return;
    }
    if (seq !== this.seq) return;
    this.items = answer?.conversations || [];
    this.complete = this.items.length < PAGE_SIZE;
    this._render();
  }

  async _loadMore() {
    const last = this.items[this.items.length - 1];
    if (!last) return;
    const seq = ++this.seq;
    this.more.disabled = true;
    try {
      const answer = await this.api.list({ q: this.query, limit: PAGE_SIZE, before: last.updated_at });
      if (seq !== this.seq) return;
      const page = (answer?.conversations || []).filter((c) => !this.items.some((i) => i.id === c.id));
      this.items.push(...page);
      this.complete = (answer?.conversations || []).length < PAGE_SIZE;
      this._render();
    } catch (exc) {
      if (seq === this.seq) this._problem(`Could not load more: ${exc.message}`, exc.action);
    } finally {
      this.more.disabled = false;
    }
  }

  /** A conversation just started or answered: put it on top without a round trip. */
  upsert(conversation) {
    if (this.query) {
      this.refresh();
      return;
    }
    const old = this.items.find((c) => c.id === conversation.id);
    this.items = [{ ...old, ...conversation }, ...this.items.filter((c) => c.id !== conversation.id)];
    this._render();
  }

  forget(id) {
    this.items = this.items.filter((c) => c.id !== id);
    this._render();
  }

  _problem(message, action) {
    this.status.hidden = false;
    this.status.className = "sidebar-status alert";
    this.status.replaceChildren(el("span", { text: message }, action ? ` ${action}` : null), " ",
      el("button", { type: "button", class: "link-btn", text: "Try again", onclick: () => this.refresh() }));
  }

  /** The user is renaming, confirming a delete or has a menu open: redrawing would take it away. */
  _busy() {
    return Boolean(this.list.querySelector(".conv-rename, .conv-confirm, .conv-menu:not([hidden])"));
  }

  /** Draw what changed while the user was busy with an item. */
  _flush() {
    if (this.dirty && !this._busy()) this._render();
  }

  _render() {
    if (this._busy()) {
      this.dirty = true;
      return;
    }
    this.dirty = false;
    this.status.className = "sidebar-status muted small";
    this.status.hidden = this.items.length > 0;
    this.status.textContent = this.query ? `No conversation matches “${this.query}”.` : "No saved conversations yet.";
    const groups = new Map();
    const now = new Date();
    for (const item of this.items) {
      const name = dayGroup(item.updated_at || item.created_at, now);
      if (!groups.has(name)) groups.set(name, []);
      groups.get(name).push(item);
    }
    this.list.replaceChildren(...[...groups].map(([name, items]) => el("section", { class: "conv-group" },
      el("h3", { class: "conv-group-title", text: name }),
      el("ul", { class: "conv-list" }, items.map((item) => this._item(item))))));
    this.more.hidden = this.complete || !this.items.length;
    this.setActive(this.activeId);
  }

  _item(conv) {
    const title = conv.title || "New conversation";
    const link = el("a", { class: "conv-link", href: `?c=${encodeURIComponent(conv.id)}`, title, text: title });
    link.addEventListener("click", (e) => {
      if (e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey || e.altKey) return; // a new tab is fine
      e.preventDefault();
      this._closeDrawer();
      this.onOpen(conv.id);
    });
    link.addEventListener("dblclick", (e) => {
      e.preventDefault();
      this._rename(link.closest(".conv"), conv);
    });
    const level = conv.compliance_level
      ? el("span", { class: "badge conv-level", title: `Compliance level: ${conv.compliance_level}`, text: conv.compliance_level }) : null;
    return el("li", { class: "conv", dataset: { id: conv.id } }, link, level, this._menu(conv, title));
  }

  _menu(conv, title) {
    const button = el("button", { type: "button", class: "icon-btn conv-menu-btn", "aria-expanded": "false",
      "aria-label": `Options for ${title}`, title: "Options", text: "⋯" });
    const item = (text, onclick) => el("button", { type: "button", class: "conv-menu-item", text, onclick });
    const exportLink = (text, format) => el("a", { class: "conv-menu-item", href: this.api.exportUrl(conv.id, format), download: "",
      text, onclick: () => this._closeMenus() });
    const menu = el("div", { class: "conv-menu", hidden: true, role: "group", "aria-label": `Options for ${title}` },
      item("Rename", (e) => this._rename(e.target.closest(".conv"), conv)),
      exportLink("Export as Markdown", "md"),
      exportLink("Export as JSON", "json"),
      item("Delete", (e) => this._confirmDelete(e.target.closest(".conv"), conv)));
    button.addEventListener("click", () => {
      const open = menu.hidden;
      this._closeMenus();
      menu.hidden = !open;
      button.setAttribute("aria-expanded", String(open));
      if (open) menu.querySelector(".conv-menu-item")?.focus();
    });
    return el("div", { class: "conv-menu-wrap" }, button, menu);
  }

  /** Close every open item menu; true when one was open. */
  _closeMenus({ flush = true } = {}) {
    let closed = false;
    for (const menu of this.list.querySelectorAll(".conv-menu:not([hidden])")) {
      const hadFocus = menu.contains(document.activeElement);
      menu.hidden = true;
      menu.previousElementSibling?.setAttribute("aria-expanded", "false");
      if (hadFocus) menu.previousElementSibling?.focus();
      closed = true;
    }
    if (flush) this._flush();
    return closed;
  }

  _rename(node, conv) {
    this._closeMenus({ flush: false });
    const link = node.querySelector(".conv-link");
    const input = el("input", { type: "text", class: "conv-rename", "aria-label": "Conversation title", maxlength: "200" });
    input.value = conv.title || "";
    let done = false;
    const finish = async (save) => {
      if (done) return;
      done = true;
      const title = input.value.trim();
      input.replaceWith(link);
      if (!save || !title || title === conv.title) {
        link.focus();
        this._flush();
        return;
      }
      link.textContent = title;
      try {
        await this.api.rename(conv.id, title);
        conv.title = title;
        for (const item of this.items) if (item.id === conv.id) item.title = title; // the list may hold a newer copy
        link.title = title;
        this.onRenamed?.(conv.id, title);
      } catch (exc) {
        link.textContent = conv.title || "New conversation";
        this._problem(`Could not rename the conversation: ${exc.message}`, exc.action);
      }
      link.focus();
      this._flush();
    };
    input.addEventListener("keydown", (e) => {
      if (e.key === "Enter") {
        e.preventDefault();
        finish(true);
      } else if (e.key === "Escape") {
        e.preventDefault();
        e.stopPropagation();
        finish(false);
      }
    });
    input.addEventListener("blur", () => finish(true));
    link.replaceWith(input);
    input.focus();
    input.select();
  }

  _confirmDelete(node, conv) {
    this._closeMenus({ flush: false });
    const title = conv.title || "New conversation";
    const cancel = el("button", { type: "button", class: "btn small-btn", text: "Cancel" });
    const confirm = el("button", { type: "button", class: "btn danger small-btn", text: "Delete" });
    const box = el("div", { class: "conv-confirm", role: "group", "aria-label": `Delete ${title}?` },
      el("p", { class: "small", text: `Delete “${title}”? Its messages and files go too; this cannot be undone.` }),
      el("div", { class: "actions" }, confirm, cancel));
    cancel.addEventListener("click", () => {
      box.remove();
      node.querySelector(".conv-menu-btn")?.focus();
      this._flush();
    });
    confirm.addEventListener("click", async () => {
      confirm.disabled = true;
      try {
        await this.api.remove(conv.id);
      } catch (exc) {
        if (exc.status !== 404) {
          confirm.disabled = false;
          this._problem(`Could not delete the conversation: ${exc.message}`, exc.action);
          return;
        }
      }
      box.remove();
      this.forget(conv.id);
      this.onDeleted(conv.id);
    });
    node.querySelector(".conv-confirm")?.remove();
    node.append(box);
    confirm.focus();
  }
}
