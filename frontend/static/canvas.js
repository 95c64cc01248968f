// The canvas beside the chat: one tab per artifact, a download button,
// closable, and resizable with a drag handle (or the arrow keys on it).

import { el } from "./dom.js";
import { buildViewer, viewerKind } from "./viewers.js";

const MIN_WIDTH = 280;
// On a phone the canvas covers the whole chat: it opens when asked (a file
// chip, the Canvas button), never by itself over the answer being written.
const NARROW = window.matchMedia("(max-width: 899px)");
const WIDTH_KEY = "switchboard.canvasWidth";

export class Canvas {
  constructor({ panel, tabs, body, download, close, resizer, toggle, onVisibility }) {
    Object.assign(this, { panel, tabList: tabs, body, download, resizer, toggle, onVisibility });
    this.items = new Map(); // artifact id -> {artifact, tab, view}
    this.selected = null;
    this.pending = null; // the file to show first when the canvas is opened (narrow screens)
    close.addEventListener("click", () => this.hide());
    toggle.addEventListener("click", () => (this.panel.hidden ? this.show() : this.hide()));
    tabs.addEventListener("keydown", (e) => this._tabKeys(e));
    this._setupResize();
    const saved = Number(localStorage.getItem(WIDTH_KEY));
    if (saved >= MIN_WIDTH) this.panel.style.width = `${saved}px`;
  }

  /** Open the artifacts of a tool result when its display hints ask for it. */
  showResult(artifacts, display) {
    if (!artifacts?.length || !display?.open_canvas) return;
    const primary = artifacts.find((a) => a.name === display.primary_file) || artifacts[0];
    for (const artifact of artifacts) this.add(artifact);
    if (NARROW.matches && this.panel.hidden) {
      this.pending = primary.id;
      return;
    }
    this.select(primary.id);
    this.show();
  }

  open(artifact) {
    this.add(artifact);
    this.pending = null;
    this.select(artifact.id);
    this.show();
  }

  add(artifact) {
    if (this.items.has(artifact.id)) return;
    const kind = viewerKind(artifact);
    const tab = el("button", { type: "button", role: "tab", class: "canvas-tab", id: `tab-${artifact.id}`,
      "aria-selected": "false", tabindex: "-1", title: `${artifact.name} (${artifact.mime})`, dataset: { kind } },
    el("span", { class: "tab-name", text: artifact.name }));
    const closeTab = el("button", { type: "button", class: "tab-close", "aria-label": `Close ${artifact.name}`, text: "×" });
    const wrap = el("div", { class: "canvas-tab-wrap", role: "presentation" }, tab, closeTab);
    tab.addEventListener("click", () => this.select(artifact.id));
    closeTab.addEventListener("click", () => this.remove(artifact.id));
    const view = el("div", { class: "canvas-view", role: "tabpanel", "aria-labelledby": tab.id, hidden: true, tabindex: "0" },
      el("p", { class: "muted", text: "Loading…" }));
    this.tabList.append(wrap);
    this.body.append(view);
    this.items.set(artifact.id, { artifact, tab, wrap, view, loaded: false });
    this._updateToggle();
  }

  /** An MCP App's tab: `app` = {title, mount(view), teardown()}; mounted when first shown. */
  addApp(id, app) {
    if (this.items.has(id)) return;
    const tab = el("button", { type: "button", role: "tab", class: "canvas-tab", id: `tab-${id}`, "aria-selected": "false",
      tabindex: "-1", title: app.title, dataset: { kind: "app" } }, el("span", { class: "tab-name", text: app.title }));
    const closeTab = el("button", { type: "button", class: "tab-close", "aria-label": `Close ${app.title}`, text: "×" });
    const wrap = el("div", { class: "canvas-tab-wrap", role: "presentation" }, tab, closeTab);
    tab.addEventListener("click", () => this.select(id));
    closeTab.addEventListener("click", () => this.remove(id));
    const view = el("div", { class: "canvas-view app-view", role: "tabpanel", "aria-labelledby": tab.id, hidden: true });
    this.tabList.append(wrap);
    this.body.append(view);
    this.items.set(id, { app, tab, wrap, view, loaded: false });
    this._updateToggle();
  }

  select(id) {
    const item = this.items.get(id);
    if (!item) return;
    this.selected = id;
    for (const [otherId, other] of this.items) {
      const on = otherId === id;
      other.tab.setAttribute("aria-selected", String(on));
      other.tab.tabIndex = on ? 0 : -1;
      other.view.hidden = !on;
    }
    item.tab.scrollIntoView({ block: "nearest", inline: "nearest" });
    if (item.app) {
      this.download.hidden = true;
      if (!item.loaded) {
        item.loaded = true;
        item.app.mount(item.view);
      }
      return;
    }
    this.download.href = `${item.artifact.url}?download=1`;
    this.download.setAttribute("aria-label", `Download ${item.artifact.name}`);
    this.download.hidden = false;
    if (!item.loaded) {
      item.loaded = true;
      buildViewer(item.artifact).then((node) => item.view.replaceChildren(node));
    }
  }

  remove(id) {
    const item = this.items.get(id);
    if (!item) return;
    const ids = [...this.items.keys()];
    const index = ids.indexOf(id);
    item.wrap.remove();
    if (item.app) {
      // The app is told first (ui/resource-teardown), then its frame goes.
      item.view.hidden = true;
      item.app.teardown().finally(() => item.view.remove());
    } else {
      item.view.remove();
    }
    this.items.delete(id);
    if (this.selected === id) {
      const next = ids[index + 1] ?? ids[index - 1];
      this.selected = null;
      if (next && this.items.has(next)) {
        this.select(next);
        this.items.get(next).tab.focus();
      }
    }
    if (!this.items.size) this.hide();
    this._updateToggle();
  }

  show() {
    if (!this.items.size) return;
    if (this.selected === null || this.pending) this.select(this.items.has(this.pending) ? this.pending : [...this.items.keys()][0]);
    this.pending = null;
    this.panel.hidden = false;
    this.resizer.hidden = false;
    this.toggle.setAttribute("aria-expanded", "true");
    this.onVisibility?.(true);
  }

  hide() {
    const wasOpen = !this.panel.hidden;
    this.panel.hidden = true;
    this.resizer.hidden = true;
    this.toggle.setAttribute("aria-expanded", "false");
    this.onVisibility?.(false);
    if (wasOpen && this.panel.contains(document.activeElement)) this.toggle.focus();
  }

  clear() {
    for (const id of [...this.items.keys()]) this.remove(id);
    this.hide();
  }

  _updateToggle() {
    this.toggle.hidden = this.items.size === 0;
    this.toggle.textContent = `Canvas (${this.items.size})`;
  }

  _tabKeys(e) {
    const ids = [...this.items.keys()];
    const index = ids.indexOf(this.selected);
    const moves = { ArrowRight: index + 1, ArrowLeft: index - 1, Home: 0, End: ids.length - 1 };
    if (!(e.key in moves) || !ids.length) return;
    e.preventDefault();
    const next = ids[(moves[e.key] + ids.length) % ids.length];
    this.select(next);
    this.items.get(next).tab.focus();
  }

  _setWidth(px) {
    const max = Math.max(MIN_WIDTH, window.innerWidth - 320);
    const width = Math.round(Math.min(max, Math.max(MIN_WIDTH, px)));
    this.panel.style.width = `${width}px`;
    this.resizer.setAttribute("aria-valuenow", String(width));
    localStorage.setItem(WIDTH_KEY, String(width));
  }

  _setupResize() {
    const handle = this.resizer;
    handle.addEventListener("pointerdown", (e) => {
      e.preventDefault();
      handle.setPointerCapture(e.pointerId);
      document.body.classList.add("resizing"); // iframes must not swallow the pointer
      const move = (ev) => this._setWidth(this.panel.getBoundingClientRect().right - ev.clientX);
      const up = () => {
        document.body.classList.remove("resizing");
        handle.removeEventListener("pointermove", move);
        handle.removeEventListener("pointerup", up);
        handle.removeEventListener("pointercancel", up);
      };
      handle.addEventListener("pointermove", move);
      handle.addEventListener("pointerup", up);
      handle.addEventListener("pointercancel", up);
    });
    handle.addEventListener("keydown", (e) => {
      const step = e.shiftKey ? 80 : 24;
      const width = this.panel.getBoundingClientRect().width;
      if (e.key === "ArrowLeft") this._setWidth(width + step);
      else if (e.key === "ArrowRight") this._setWidth(width - step);
      else return;
      e.preventDefault();
    });
  }
}
