// The stored conversations over HTTP: list, search, open, rename, switch
// branch, delete, export.  Failures become ApiError with the server's message
// and what the user can do about it (errors.js).

import { fetchJson, jsonBody } from "./errors.js";

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
    return fetchJson(url);
  }

  /** The conversation with its whole shown branch: the server answers a page of the newest
   *  messages (`has_more` when older ones exist), so the older pages are read in turn. */
  async get(id) {
    return this._whole(id, await fetchJson(this._url(id)));
  }

  async _whole(id, conv) {
    while (conv.has_more && conv.messages.length) {
      const url = new URL(this._url(id), location.href);
      url.searchParams.set("before", conv.messages[0].id);
      const older = await fetchJson(url);
      conv.messages = [...older.messages, ...conv.messages];
      conv.has_more = older.has_more;
    }
    return conv;
  }

  rename(id, title) {
    return fetchJson(this._url(id), jsonBody("PATCH", { title }));
  }

  /** Switch to the newest branch through a message; answers the whole conversation. */
  async branch(id, messageId) {
    return this._whole(id, await fetchJson(this._url(id), jsonBody("PATCH", { branch: messageId })));
  }

  remove(id) {
    return fetchJson(this._url(id), { method: "DELETE" });
  }

  exportUrl(id, format) {
    return this._url(id, `/export?format=${encodeURIComponent(format)}`);
  }
}
