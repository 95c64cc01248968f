// The stored conversations over HTTP: list, search, open, rename, switch
// branch, delete, export.  Failures become ApiError with the server's message
// and what the user can do about it.

export class ApiError extends Error {
  constructor(status, { code, message, action } = {}) {
    super(message || `The server answered ${status}.`);
    this.status = status;
    this.code = code || (status === 404 ? "not_found" : "error");
    this.action = action || "";
  }
}

async function call(url, options = {}) {
  let res;
  try {
    res = await fetch(url, { credentials: "same-origin", ...options });
  } catch {
    throw new ApiError(0, { code: "network", message: "The server could not be reached.", action: "Check the connection and try again." });
  }
  if (res.status === 204) return null;
  let body = null;
  try {
    body = await res.json();
  } catch {
    body = null;
  }
  if (!res.ok) throw new ApiError(res.status, body?.error || {});
  return body;
}

const json = (method, value) => ({ method, headers: { "content-type": "application/json" }, body: JSON.stringify(value) });

export class ConversationsApi {
  constructor(base = "/api/conversations") {
    this.base = base;
  }

  _url(id = "", suffix = "") {
    return `${this.base}${id ? `/${encodeURIComponent(id)}` : ""}${suffix}`;
  }

  /** `{conversations: [...]}`, newest first; `before` pages on, `q` searches. */
  list({ q = "", limit = 50, before = "" } = {}) {
    const url = new URL(this._url(), location.href);
    if (q) url.searchParams.set("q", q);
    if (limit) url.searchParams.set("limit", String(limit));
    if (before) url.searchParams.set("before", before);
    return call(url);
  }

  /** The conversation with its whole shown branch: the server answers a page of the newest
   *  messages (`has_more` when older ones exist), so the older pages are read in turn. */
  async get(id) {
    return this._whole(id, await call(this._url(id)));
  }

  async _whole(id, conv) {
    while (conv.has_more && conv.messages.length) {
      const url = new URL(this._url(id), location.href);
      url.searchParams.set("before", conv.messages[0].id);
      const older = await call(url);
      conv.messages = [...older.messages, ...conv.messages];
      conv.has_more = older.has_more;
    }
    return conv;
  }

  rename(id, title) {
    return call(this._url(id), json("PATCH", { title }));
  }

  /** Switch to the newest branch through a message; answers the whole conversation. */
  async branch(id, messageId) {
    return this._whole(id, await call(this._url(id), json("PATCH", { branch: messageId })));
  }

  remove(id) {
    return call(this._url(id), { method: "DELETE" });
  }

  exportUrl(id, format) {
    return this._url(id, `/export?format=${encodeURIComponent(format)}`);
  }
}
