// The admin console's calls to /api/admin/...: the page holds no rule of its own; every check is
// the server's, and its error (message and what to do) is what the page shows.

import { el } from "./dom.js";

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export async function call(method, url, body) {
  const res = await fetch(url, {
    method, credentials: "same-origin",
    headers: body === undefined ? {} : { "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) {
    const problem = (await res.json().catch(() => null))?.error;
    const message = problem ? `${problem.message}${problem.action ? ` ${problem.action}` : ""}` : `The server answered ${res.status}.`;
    throw new ApiError(res.status, message);
  }
  return res.status === 204 ? null : res.json();
}

export const when = (iso) => (iso ? new Date(iso).toLocaleString() : "never");

/** A pane's message line: `say("...")` shows it (an error unless `ok`), `say("")` hides it. */
export function messageLine() {
  const node = el("p", { class: "alert", role: "alert", hidden: true });
  const say = (text, { ok = false } = {}) => {
    node.textContent = text;
    node.hidden = !text;
    node.className = ok ? "admin-ok" : "alert";
    node.setAttribute("role", ok ? "status" : "alert");
  };
  return { node, say };
}

export function button(text, onclick, { danger = false, primary = false, label } = {}) {
  return el("button", { type: "button", class: `btn small-btn${danger ? " danger" : ""}${primary ? " primary" : ""}`,
    text, "aria-label": label, onclick });
}
