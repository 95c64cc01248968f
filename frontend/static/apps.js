// The MCP Apps bridge (extension io.modelcontextprotocol/ui, protocol 2026-01-26): JSON-RPC
// over postMessage with one app's sandbox proxy frame, and the app's requests passed to
// POST /api/apps/{call_id}/rpc.  What the page does for the app (confirmations, display
// modes, sizes, chat messages) comes in as `host`; this module only speaks the protocol.

import { errorFrom } from "./errors.js";

export const PROTOCOL_VERSION = "2026-01-26";
const SUPPORTED_VERSIONS = new Set(["2026-01-26", "2025-11-21"]);
const RATE_BURST = 30; // requests an app may send at once…
const RATE_PER_S = 10; // …and per second after that
const NOTICE_BURST = 200; // notifications have their own, more generous bucket (size changes are
const NOTICE_PER_S = 50; // coalesced to one per frame and never counted)
const TEARDOWN_WAIT_MS = 1000;
const ERR = { parse: -32700, invalid: -32600, method: -32601, params: -32602, internal: -32603, refused: -32000 };

const bridges = new Map(); // the proxy frame's window -> its bridge

/** Every message to the page passes here; only an app's own proxy frame, from the sandbox origin, is heard. */
window.addEventListener("message", (event) => {
  const bridge = bridges.get(event.source);
  if (!bridge) {
    if (event.source !== window && event.data?.jsonrpc === "2.0") console.warn("[apps] ignored a message from a frame that is not an app's", event.origin);
    return;
  }
  if (event.origin !== bridge.sandboxOrigin) {
    bridge.refused("a message from an unexpected origin", event.origin);
    return;
  }
  bridge.receive(event.data);
});

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const validId = (id) => (typeof id === "string" && id.length <= 200) || Number.isSafeInteger(id);

export class AppBridge {
  /** info: GET /api/apps/{call_id}; frame: the proxy iframe (not yet loaded); host: the page's side. */
  constructor({ info, frame, sandboxOrigin, rpcUrl, host }) {
    Object.assign(this, { info, frame, sandboxOrigin, rpcUrl, host });
    this.initialized = false;
    this.resourceSent = false;
    this.closed = false;
    this.appModes = null; // display modes the app declared
    this.inflight = new Map(); // the app's request ids still unanswered -> AbortController (its cancel)
    this.pending = new Map(); // our requests to the app: id -> resolve
    this.nextId = 1;
    this.requests = new Bucket(RATE_BURST, RATE_PER_S);
    this.notices = new Bucket(NOTICE_BURST, NOTICE_PER_S);
    this.size = null; // the newest size-changed not yet applied
    this.refusals = 0;
  }

  /** Listen to the frame's window (call once the frame is in the document). */
  attach() {
    bridges.set(this.frame.contentWindow, this);
  }

  refused(what, detail) {
    this.refusals += 1;
    const tool = typeof this.info.tool === "object" ? this.info.tool?.name : this.info.tool;
    console.warn(`[apps] ${this.info.server}/${tool} (${this.info.call_id}): refused ${what}`, detail ?? "");
  }

  _post(message) {
    if (this.closed || !this.frame.contentWindow) return;
    this.frame.contentWindow.postMessage({ jsonrpc: "2.0", ...message }, this.sandboxOrigin);
  }

  // A request the app cancelled is no longer in flight: it gets no answer.
  _reply(id, result) {
    if (!this.inflight.delete(id)) return;
    this._post({ id, result });
  }

  _fail(id, code, message) {
    if (!this.inflight.delete(id)) return;
    this._post({ id, error: { code, message } });
  }

  /** The app's `notifications/cancelled`: drop its request (abort what the host does for it). */
  _cancelled(params) {
    const control = this.inflight.get(params.requestId);
    if (!control) return;
    this.inflight.delete(params.requestId);
    control.abort();
  }

  _resized(params) {
    const pending = this.size;
    this.size = { width: Number(params.width) || undefined, height: Number(params.height) || undefined };
    if (pending) return; // one is already waiting for the next frame: it takes the newest size
    requestAnimationFrame(() => {
      const size = this.size;
      this.size = null;
      if (!this.closed && size) this.host.resize(size);
    });
  }

  /** A notification to the app; nothing is sent before it said `initialized`. */
  notify(method, params = {}) {
    if (this.initialized) this._post({ method, params });
  }

  contextChanged(partial) {
    this.notify("ui/notifications/host-context-changed", partial);
  }

  toolCancelled(reason) {
    this.notify("ui/notifications/tool-cancelled", { reason });
  }

  /** Ask the app to clean up, wait a moment for its answer, then stop listening. */
  async teardown(reason = "closed") {
    if (this.closed) return;
    if (this.initialized) {
      const id = this.nextId++;
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, TEARDOWN_WAIT_MS);
        this.pending.set(id, () => {
          clearTimeout(timer);
          resolve();
        });
        this._post({ id, method: "ui/resource-teardown", params: { reason } });
      });
    }
    this.close();
  }

  close() {
    this.closed = true;
    this.pending.clear();
    for (const control of this.inflight.values()) control.abort();
    this.inflight.clear();
    for (const [win, bridge] of bridges) if (bridge === this) bridges.delete(win);
  }

  receive(data) {
    if (this.closed) return;
    if (!isObject(data) || data.jsonrpc !== "2.0") {
      this.refused("a message that is not JSON-RPC 2.0", data);
      if (isObject(data) && validId(data.id) && typeof data.method === "string") this._post({ id: data.id, error: { code: ERR.invalid, message: "Invalid Request: jsonrpc must be \"2.0\"" } });
      return;
    }
    const hasId = "id" in data;
    if (!("method" in data)) {
      // A response: only to a request of ours still waiting. Anything else is a forged id.
      const done = hasId && ("result" in data || "error" in data) ? this.pending.get(data.id) : undefined;
      if (!done) {
        this.refused("a response to a request the host never sent (forged id)", data.id);
        if (!("result" in data || "error" in data)) this._post({ id: null, error: { code: ERR.invalid, message: "Invalid Request" } });
        return;
      }
      this.pending.delete(data.id);
      done(data);
      return;
    }
    if (typeof data.method !== "string" || (hasId && !validId(data.id)) || ("params" in data && !isObject(data.params))) {
      this.refused("a malformed message", data);
      this._post({ id: hasId && validId(data.id) ? data.id : null, error: { code: ERR.invalid, message: "Invalid Request" } });
      return;
    }
    if (data.method === "ui/notifications/sandbox-proxy-ready" && !hasId) {
      this._sendResource();
      return;
    }
    if (!hasId && data.method === "ui/notifications/size-changed") {
      this._resized(data.params ?? {});
      return;
    }
    if (!hasId && data.method === "notifications/cancelled") {
      this._cancelled(data.params ?? {});
      return;
    }
    if (!(hasId ? this.requests : this.notices).take()) {
      this.refused(hasId ? "a request over the rate limit" : "a notification over the rate limit", data.method);
      if (hasId) this._post({ id: data.id, error: { code: ERR.refused, message: "Too many requests from this app: slow down" } });
      return;
    }
    if (!hasId) {
      this._notification(data.method, data.params ?? {});
      return;
    }
    if (this.inflight.has(data.id)) {
      this.refused("a request id already in use", data.id);
      this._post({ id: data.id, error: { code: ERR.invalid, message: "Invalid Request: this id is already in use" } });
      return;
    }
    const control = new AbortController();
    this.inflight.set(data.id, control);
    this._request(data.id, data.method, data.params ?? {}, control.signal).catch((exc) => this._fail(data.id, ERR.internal, String(exc?.message || exc)));
  }

  _sendResource() {
    if (this.resourceSent) return;
    this.resourceSent = true;
    const { html, csp, permissions, allow } = this.info;
    // `allow`: the granted permissions as the frames' features (the server's map; the proxy keeps none)
    this._post({ method: "ui/notifications/sandbox-resource-ready", params: { html, csp: csp || {}, permissions: permissions || {}, allow: allow || [] } });
    this.info = { ...this.info, html: undefined }; // the proxy holds it now; a page with 50 apps need not
  }

  _notification(method, params) {
    switch (method) {
      case "ui/notifications/initialized":
        if (this.initialized) return;
        this.initialized = true;
        this.host.initialized?.();
        this.notify("ui/notifications/tool-input", { arguments: this.info.tool_input || {} });
        if (this.info.tool_result) this.notify("ui/notifications/tool-result", this.info.tool_result);
        return;
      case "ui/notifications/request-teardown":
        this.host.requestTeardown();
        return;
      case "notifications/message":
        this._rpc("notifications/message", params).catch(() => {});
        return;
      default:
        return; // unknown notifications are dropped, as JSON-RPC allows
    }
  }

  async _request(id, method, params, signal) {
    switch (method) {
      case "ui/initialize": {
        const caps = isObject(params.appCapabilities) ? params.appCapabilities : {};
        this.appModes = Array.isArray(caps.availableDisplayModes) ? caps.availableDisplayModes.filter((m) => typeof m === "string") : null;
        const version = SUPPORTED_VERSIONS.has(params.protocolVersion) ? params.protocolVersion : PROTOCOL_VERSION;
        this._reply(id, {
          protocolVersion: version,
          hostInfo: { name: "Switchboard", version: this.host.version || "0" },
          hostCapabilities: {
            openLinks: {}, serverTools: {}, serverResources: {}, logging: {},
            message: { text: {} }, updateModelContext: { text: {}, structuredContent: {} },
            sandbox: { permissions: this.info.permissions || {}, csp: this.info.csp || {} },
          },
          hostContext: this.host.context(),
        });
        this.host.answeredInitialize?.();
        return;
      }
      case "ping":
        this._reply(id, {});
        return;
      case "tools/call":
        if (typeof params.name !== "string" || ("arguments" in params && !isObject(params.arguments))) {
          this._fail(id, ERR.params, "tools/call needs a tool name and an arguments object");
          return;
        }
        return this._forward(id, method, { name: params.name, arguments: params.arguments || {} }, signal);
      case "resources/read":
        if (typeof params.uri !== "string") {
          this._fail(id, ERR.params, "resources/read needs a uri");
          return;
        }
        return this._forward(id, method, { uri: params.uri }, signal);
      case "ui/update-model-context":
        return this._forward(id, method, params, signal);
      case "ui/open-link":
        return this._openLink(id, params, signal);
      case "ui/message":
        return this._message(id, params, signal);
      case "ui/request-display-mode": {
        const wanted = params.mode;
        const declared = !this.appModes || this.appModes.includes(wanted);
        this._reply(id, { mode: this.host.requestDisplayMode(declared ? wanted : null) });
        return;
      }
      default:
        this._fail(id, ERR.method, `Method not found: ${method}`);
    }
  }

  async _rpc(method, params, signal) {
    const response = await fetch(this.rpcUrl, {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ method, params }), signal,
    });
    const body = await response.json().catch(() => null);
    if (response.ok && isObject(body) && "result" in body) return body.result;
    // Every error on this path carries its JSON-RPC code (the server's error tree); no code: a
    // proxy's page or no answer at all, an internal error.
    const problem = errorFrom(response.status, body);
    if (!Number.isInteger(problem.code)) problem.code = ERR.internal;
    throw problem;
  }

  async _forward(id, method, params, signal) {
    try {
      this._reply(id, await this._rpc(method, params, signal));
    } catch (exc) {
      if (signal?.aborted) return; // the app cancelled it: no answer
      if (exc.status) this.refused(`${method} (the server said ${exc.status})`, exc.message);
      this._fail(id, exc.code ?? ERR.internal, exc.message);
    }
  }

  async _openLink(id, params, signal) {
    let url;
    try {
      url = new URL(String(params.url));
    } catch {
      url = null;
    }
    if (!url || !["http:", "https:", "mailto:"].includes(url.protocol)) {
      this.refused("ui/open-link to a URL that is not http(s)", params.url);
      this._fail(id, ERR.params, "Invalid URL: only http, https and mailto links open");
      return;
    }
    if (!(await this.host.confirmLink(url.href, signal)) || signal?.aborted) {
      this.refused("ui/open-link: the user said no", url.href);
      this._reply(id, { isError: true });
      return;
    }
    window.open(url.href, "_blank", "noopener,noreferrer");
    this._reply(id, {});
  }

  async _message(id, params, signal) {
    const blocks = Array.isArray(params.content) ? params.content : isObject(params.content) ? [params.content] : null;
    if (params.role !== "user" || !blocks || !blocks.length || !blocks.every((b) => isObject(b) && b.type === "text" && typeof b.text === "string")) {
      this._fail(id, ERR.params, "ui/message takes role \"user\" and text content blocks");
      return;
    }
    const text = blocks.map((b) => b.text).join("\n\n").trim();
    if (!text || !(await this.host.confirmMessage(text, signal)) || signal?.aborted) {
      this.refused("ui/message: the user said no");
      this._reply(id, { isError: true });
      return;
    }
    this._reply(id, this.host.sendMessage(text) ? {} : { isError: true });
  }
}

/** A token bucket: `burst` at once, refilled at `perSecond`. */
class Bucket {
  constructor(burst, perSecond) {
    Object.assign(this, { burst, perSecond, tokens: burst, refilled: performance.now() });
  }

  take() {
    const now = performance.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.refilled) / 1000) * this.perSecond);
    this.refilled = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}
