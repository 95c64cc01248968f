// Connecting the user's own account to a server that needs sign-in: a small
// form for a user-entered token, or a link that starts the OAuth sign-in, and
// "Disconnect".  Fed by the server's `auth` entry in GET /api/config; the
// credential itself never comes back from the server.

import { el } from "./dom.js";

async function send(url, method, body) {
  const res = await fetch(url, { method, credentials: "same-origin",
    headers: body ? { "Content-Type": "application/json" } : {}, body: body ? JSON.stringify(body) : undefined });
  if (!res.ok) {
    const detail = (await res.json().catch(() => null))?.error?.message;
    throw new Error(detail || (res.status === 422 ? "that token cannot be used (no spaces or line breaks)" : `the server answered ${res.status}`));
  }
}

/** The connect / disconnect controls of one server; `onChange` reloads the panel. */
export function connectControls(server, onChange) {
  const auth = server.auth;
  if (!auth) return null;
  const box = el("div", { class: "server-connect", dataset: { connected: String(auth.connected) } });
  const note = el("p", { class: "muted small connect-note", role: "status" });
  const fail = (exc) => { note.textContent = exc.message; };
  if (auth.connected) {
    box.append(el("p", { class: "small", text: "Connected with your account." }),
      el("button", { type: "button", class: "btn server-disconnect", text: "Disconnect", onclick: async () => {
        try { await send(auth.disconnect_url, "DELETE"); onChange(); } catch (exc) { fail(exc); }
      } }), note);
    return box;
  }
  if (auth.type === "oauth") {
    box.append(el("p", { class: "small", text: "This server needs you to sign in with your own account." }),
      el("a", { class: "btn server-connect-link", href: auth.connect_url, text: "Connect" }));
    return box;
  }
  const input = el("input", { type: "password", name: "token", autocomplete: "off", required: true,
    "aria-label": `Your token for ${server.name}`, placeholder: "Your token" });
  const form = el("form", { class: "connect-form" }, input, el("button", { type: "submit", class: "btn", text: "Connect" }));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await send(auth.token_url, "PUT", { token: input.value.trim() });
      input.value = "";
      onChange();
    } catch (exc) { fail(exc); }
  });
  box.append(el("p", { class: "small", text: "This server needs your own token." }), form, note);
  return box;
}
