// The API tokens page: make a token (its text is shown once), list, revoke.
// Every check is on the server; this page only calls /api/tokens.

import { el } from "./dom.js";
import { fetchJson, jsonBody } from "./errors.js";

const $ = (id) => document.getElementById(id);
const list = $("token-list");
const errorBox = $("token-error");

function showError(message) {
  errorBox.textContent = message;
  errorBox.hidden = !message;
}

async function call(method, url, body) {
  try {
    return await fetchJson(url, body ? jsonBody(method, body) : { method });
  } catch (exc) {
    throw new Error(`${exc.message}${exc.action ? ` ${exc.action}` : ""}`);
  }
}

const when = (iso) => (iso ? new Date(iso).toLocaleString() : "never");

async function load() {
  try {
    const { tokens } = await call("GET", "/api/tokens");
    list.replaceChildren(...(tokens.length ? tokens.map(item) : [el("li", { class: "muted", text: "You have no tokens." })]));
    showError("");
  } catch (exc) {
    showError(`Could not list your tokens: ${exc.message}`);
  }
}

function item(token) {
  const revoke = el("button", { type: "button", class: "btn danger", text: "Revoke",
    "aria-label": `Revoke ${token.name}`, onclick: async () => {
      if (!window.confirm(`Revoke the token "${token.name}"? Anything using it stops working at once.`)) return;
      try {
        await call("DELETE", `/api/tokens/${encodeURIComponent(token.id)}`);
        await load();
      } catch (exc) {
        showError(`Could not revoke it: ${exc.message}`);
      }
    } });
  return el("li", { class: "token-item", dataset: { id: token.id } },
    el("span", { class: "token-name", text: token.name }),
    el("span", { class: "muted small", text: `made ${when(token.created_at)} · last used ${when(token.last_used_at)}` }),
    revoke);
}

$("token-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = $("token-name");
  try {
    const made = await call("POST", "/api/tokens", { name: input.value });
    $("token-value").textContent = made.token;
    $("token-new").hidden = false;
    input.value = "";
    await load();
  } catch (exc) {
    showError(`Could not make a token: ${exc.message}`);
  }
});

$("token-copy").addEventListener("click", async () => {
  const button = $("token-copy");
  try {
    await navigator.clipboard.writeText($("token-value").textContent);
    button.textContent = "Copied";
  } catch {
    button.textContent = "Select it and copy by hand";
  }
});

load();
