// MCP Apps in the canvas: one tab per app tool call, mounted from GET /api/apps/{call_id}
// (the stored input and result) in the sandbox proxy frame, with the display modes the
// page can offer (inline in the canvas, full screen, picture-in-picture on wide screens).

import { approvalPrompt } from "./approval.js";
import { AppBridge } from "./apps.js";
import { confirmDialog } from "./confirm.js";
import { el } from "./dom.js";

const NARROW = window.matchMedia("(max-width: 899px)");
const DARK = window.matchMedia("(prefers-color-scheme: dark)");
const STYLE_VARIABLES = {
  "--color-background-primary": "light-dark(#ffffff, #141518)",
  "--color-background-secondary": "light-dark(#f5f6f8, #1c1e23)",
  "--color-background-tertiary": "light-dark(#eceef2, #24272e)",
  "--color-text-primary": "light-dark(#1b1d22, #e6e7ea)",
  "--color-text-secondary": "light-dark(#5d6470, #a0a7b3)",
  "--color-text-danger": "light-dark(#b8342b, #ff8078)",
  "--color-border-primary": "light-dark(#dde1e7, #30343c)",
  "--color-ring-primary": "light-dark(#2f5bd3, #8aa9ff)",
  "--font-sans": 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif',
  "--font-mono": 'ui-monospace, "SF Mono", Menlo, Consolas, monospace',
  "--border-radius-md": "8px",
};
const MODE_LABELS = { inline: "In canvas", fullscreen: "Full screen", pip: "Picture in picture" };

/** A canvas tab's label for an app: the title the call gave (a chart's), else the tool's own name
 * without its server's prefix (every tab of one server would otherwise start alike). */
export function appTitle(tool, server, args) {
  const given = typeof args?.title === "string" ? args.title.trim() : "";
  if (given) return given.slice(0, 80);
  const name = String(tool || "App");
  return server && name.startsWith(`${server}_`) ? name.slice(server.length + 1) : name;
}

const toolName = (info) => (info.tool && typeof info.tool === "object" ? info.tool.name : info.tool) || "app";

function base64url(text) {
  const bytes = new TextEncoder().encode(text);
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** One mounted app: its frame, bridge and display mode. */
class AppView {
  constructor(owner, callId, title) {
    Object.assign(this, { owner, callId, title });
    this.bridge = null;
    this.mode = "inline";
    this.view = null;
  }

  async mount(view) {
    this.view = view;
    view.replaceChildren(el("p", { class: "muted app-status", text: "Loading the app…" }));
    const { sandboxOrigin, appsUrl } = this.owner;
    if (!sandboxOrigin) {
      view.replaceChildren(el("p", { class: "notice", text: "Apps cannot run here: this address has no sandbox origin. The operator sets SWITCHBOARD_SANDBOX_ORIGIN (see docs/apps.md)." }));
      return;
    }
    let info;
    try {
      const response = await fetch(`${appsUrl}/${encodeURIComponent(this.callId)}`);
      if (!response.ok) throw new Error(response.status === 404 ? "This app is no longer available." : `The app could not be loaded (${response.status}).`);
      info = await response.json();
    } catch (exc) {
      view.replaceChildren(el("p", { class: "tool-error", role: "alert", text: exc.message }));
      return;
    }
    if (this.closed) return;
    // The sandbox drops any declared source that could reach this page's origin (web/sandbox.py).
    const csp = info.csp || {};
    const allow = (info.allow || []).map((feature) => `${feature} ${sandboxOrigin}`); // the server's names of the granted permissions
    const src = `${sandboxOrigin}/proxy?host=${encodeURIComponent(location.origin)}&csp=${base64url(JSON.stringify(csp))}`;
    this.frame = el("iframe", { class: "app-frame", title: `${toolName(info)} (app from ${info.server})`, src,
      sandbox: "allow-scripts allow-same-origin allow-forms", allow: allow.join("; ") || undefined, referrerpolicy: "no-referrer" });
    this.notices = el("div", { class: "app-notices" });
    this.toolbar = el("div", { class: "app-toolbar", role: "toolbar", "aria-label": "App display" },
      el("span", { class: "app-origin", text: `App from ${info.server}` }),
      this.status = el("span", { class: "app-call-status muted small", role: "status" }),
      ...this._modes().map((mode) => el("button", { type: "button", class: "btn app-mode", dataset: { mode }, text: MODE_LABELS[mode],
        onclick: () => this.setMode(mode) })));
    this.shell = el("div", { class: "app-shell", dataset: { mode: "inline", border: String(info.prefers_border !== false) } },
      this.toolbar, this.notices, this.frame);
    view.replaceChildren(this.shell);
    this.bridge = new AppBridge({ info: { ...info, csp }, frame: this.frame, sandboxOrigin, rpcUrl: `${appsUrl}/${encodeURIComponent(this.callId)}/rpc`,
      host: this._host() });
    this.bridge.attach();
    this.owner.live.add(this);
    this._observe();
    info = null; // the closures above share this scope: without this they would keep the app's HTML alive
  }

  _modes() {
    return NARROW.matches ? ["inline", "fullscreen"] : ["inline", "fullscreen", "pip"];
  }

  _dimensions() {
    if (this.mode !== "inline") {
      const box = this.shell.getBoundingClientRect();
      return { width: Math.round(box.width), height: Math.round(box.height - this.toolbar.offsetHeight) };
    }
    const box = this.view.getBoundingClientRect();
    return { width: Math.round(box.width), maxHeight: Math.max(120, Math.round(box.height - this.toolbar.offsetHeight)) };
  }

  context() {
    return {
      toolInfo: { id: this.callId, tool: typeof this.bridge?.info.tool === "object" ? this.bridge.info.tool : { name: toolName(this.bridge?.info || {}) } },
      theme: DARK.matches ? "dark" : "light",
      styles: { variables: STYLE_VARIABLES },
      displayMode: this.mode,
      availableDisplayModes: this._modes(),
      containerDimensions: this._dimensions(),
      locale: navigator.language || "en",
      timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
      userAgent: `Switchboard/${this.owner.version}`,
      platform: NARROW.matches ? "mobile" : "web",
      deviceCapabilities: { touch: matchMedia("(pointer: coarse)").matches, hover: matchMedia("(hover: hover)").matches },
    };
  }

  _host() {
    const who = () => `The app from ${this.bridge.info.server} (${toolName(this.bridge.info)})`;
    return {
      version: this.owner.version,
      context: () => this.context(),
      answeredInitialize: () => performance.mark(`sb:app-initialized:${this.callId}`),
      resize: ({ height }) => {
        if (this.mode === "inline" && height) this.frame.style.height = `${Math.min(height, this._dimensions().maxHeight)}px`;
      },
      requestTeardown: () => this.owner.close(this.callId),
      requestDisplayMode: (mode) => (mode && this._modes().includes(mode) ? this.setMode(mode) : this.mode),
      confirmLink: (url, signal) => confirmDialog({ title: "Open a link?", body: `${who()} wants to open this address in a new tab:`, detail: url, yes: "Open link", signal }),
      confirmMessage: (text, signal) => confirmDialog({ title: "Send a message?", body: `${who()} wants to send this message in the chat as you:`, detail: text, yes: "Send message", signal }),
      sendMessage: (text) => this.owner.sendMessage(text),
    };
  }

  setMode(mode) {
    if (!this.shell || mode === this.mode) return this.mode;
    this.mode = mode;
    this.shell.dataset.mode = mode;
    if (mode !== "inline") this.frame.style.height = "";
    for (const b of this.toolbar.querySelectorAll(".app-mode")) b.setAttribute("aria-pressed", String(b.dataset.mode === mode));
    this.bridge?.contextChanged({ displayMode: mode, containerDimensions: this._dimensions() });
    return mode;
  }

  _observe() {
    let timer = null;
    this.resizeObserver = new ResizeObserver(() => {
      clearTimeout(timer);
      timer = setTimeout(() => this.bridge?.contextChanged({ containerDimensions: this._dimensions() }), 150);
    });
    this.resizeObserver.observe(this.view);
  }

  /** An approval the app's own tool call is waiting for, shown on the app. */
  approval(event, send) {
    const form = approvalPrompt(event, send);
    this.notices.append(form);
    form.scrollIntoView({ block: "nearest" });
  }

  async teardown() {
    this.closed = true;
    this.resizeObserver?.disconnect();
    this.owner.live.delete(this);
    await this.bridge?.teardown("closed by the user");
  }
}

export class AppViews {
  /** `sendMessage(text)`: send a chat message as the user (false when it cannot be sent now). */
  constructor({ canvas, appsUrl, sandboxOrigin, version, sendMessage }) {
    Object.assign(this, { canvas, appsUrl, sandboxOrigin, version, sendMessage });
    this.views = new Map(); // call id -> AppView (until its tab is closed)
    this.live = new Set();
    this.newest = null;
    DARK.addEventListener("change", () => this._broadcast({ theme: DARK.matches ? "dark" : "light" }));
    NARROW.addEventListener("change", () => {
      for (const view of this.live) {
        if (!view._modes().includes(view.mode)) view.setMode("inline");
        view.bridge?.contextChanged({ availableDisplayModes: view._modes(), platform: NARROW.matches ? "mobile" : "web" });
      }
    });
  }

  _broadcast(partial) {
    for (const view of this.live) view.bridge?.contextChanged(partial);
  }

  /** The canvas tab of an app tool call; `show`: select it and open the canvas. */
  add(callId, { title, show = false } = {}) {
    const id = `app-${callId}`;
    if (!this.views.has(callId)) {
      const view = new AppView(this, callId, this._unique(title || "App"));
      this.views.set(callId, view);
      this.canvas.addApp(id, { title: view.title, mount: (node) => view.mount(node), teardown: () => this._drop(callId, view) });
    }
    if (show) this.canvas.open({ id });
  }

  /** `title`, or `title 2`, `title 3`… when an open tab has it already. */
  _unique(title) {
    const taken = new Set([...this.views.values()].map((v) => v.title));
    let label = title;
    for (let n = 2; taken.has(label); n++) label = `${title} ${n}`;
    return label;
  }

  open(callId, title) {
    this.add(callId, { title, show: true });
  }

  _drop(callId, view) {
    if (this.views.get(callId) === view) this.views.delete(callId);
    return view.teardown();
  }

  close(callId) {
    this.canvas.remove(`app-${callId}`);
  }

  /** A stored app tool call drawn from the store: its tab is back; the newest one is shown once drawn
   * (`older`: drawn after the newest messages, never shown for itself). */
  stored(callId, title, { older = false } = {}) {
    const known = this.views.has(callId);
    this.add(callId, { title });
    if (known || older) return;
    this.newest = callId;
    clearTimeout(this.showTimer);
    this.showTimer = setTimeout(() => {
      if (this.newest && this.views.has(this.newest) && !NARROW.matches) this.open(this.newest);
      this.newest = null;
    }, 0);
  }

  /** tool_start / tool_result of a call an app made (`from_app`: the app's call id). */
  callEvent(event) {
    const view = this.views.get(event.from_app);
    if (!view?.status) return;
    const tool = event.tool || "a tool";
    view.status.textContent = event.type === "tool_start" ? `Calling ${tool}…`
      : `${tool}: ${event.ok ? "done" : "failed"}${Number.isFinite(event.duration_ms) ? ` (${event.duration_ms} ms)` : ""}`;
  }

  /** An approval_request for a call an app asked to make (`from_app`): asked on that app. */
  approval(event, send) {
    const target = this.views.get(event.from_app);
    if (!target || !this.live.has(target)) return false;
    this.canvas.open({ id: `app-${target.callId}` });
    target.approval(event, send);
    return true;
  }
}
