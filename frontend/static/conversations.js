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

  /** The conversation with the newest page of its shown branch (about 200 messages); `has_more`
   *  when older ones exist, which `older` reads a page at a time when the reader asks for them. */
  get(id) {
    return fetchJson(this._url(id));
  }

  /** The page of the shown branch just before the message `beforeId`: `{messages, has_more, ...}`. */
  older(id, beforeId) {
    const url = new URL(this._url(id), location.href);
    url.searchParams.set("before", beforeId);
    return fetchJson(url);
  }

  rename(id, title) {
    return fetchJson(this._url(id), jsonBody("PATCH", { title }));
  }

  /** Switch to the newest branch through a message; answers the conversation as `get` does. */
  branch(id, messageId) {
    return fetchJson(this._url(id), jsonBody("PATCH", { branch: messageId }));
  }

  remove(id) {
    return fetchJson(this._url(id), { method: "DELETE" });
  }

  exportUrl(id, format) {
    return this._url(id, `/export?format=${encodeURIComponent(format)}`);
  }
}
