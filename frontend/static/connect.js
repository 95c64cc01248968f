// Connecting the user's own account to a server that needs sign-in: a small
// form for a user-entered token, or a link that starts the OAuth sign-in, and
// "Disconnect".  Fed by the server's `auth` entry in GET /api/config; the
// credential itself never comes back from the server.

import { el } from "./dom.js";
import { ApiError, fetchJson, jsonBody } from "./errors.js";

async function send(url, method, body) {
  try {
    return (await fetchJson(url, body ? jsonBody(method, body) : { method })) ?? {};
  } catch (exc) {
    if (exc instanceof ApiError && exc.status === 422) throw new Error("that token cannot be used (no spaces or line breaks)");
    throw exc;
  }
}

/** The notice the page was opened with after a Connect that did not work: it can be
 * dismissed, and the address loses it so a reload does not show it again. */
export function signInNotice() {
  const url = new URL(location.href);
  url.searchParams.delete("signin_notice");
  if (url.href !== location.href) history.replaceState(history.state, "", url);
  const box = document.getElementById("signin-notice");
  box?.querySelector(".signin-notice-close")?.addEventListener("click", () => box.remove());
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
  if (auth.refused) note.textContent = `Refused: ${auth.refused}`;
  if (auth.type === "oauth") {
    box.append(el("p", { class: "small", text: "This server needs you to sign in with your own account." }),
      el("a", { class: "btn server-connect-link", href: auth.connect_url, text: "Connect" }), note);
    return box;
  }
  const input = el("input", { type: "password", name: "token", autocomplete: "off", required: true,
    "aria-label": `Your token for ${server.name}`, placeholder: "Your token" });
  const form = el("form", { class: "connect-form" }, input, el("button", { type: "submit", class: "btn", text: "Connect" }));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    note.textContent = "Checking the token…";
    try {
      const answer = await send(auth.token_url, "PUT", { token: input.value.trim() });
      if (answer.connected === false) {  // refused: say why, keep what was typed so it can be corrected
        note.textContent = `Refused: ${answer.refused || "the server did not accept this token"}`;
        input.focus();
        return;
      }
      input.value = "";
      onChange();
    } catch (exc) { fail(exc); }
  });
  box.append(el("p", { class: "small", text: "This server needs your own token." }), form, note);
  return box;
}
