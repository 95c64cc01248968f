// "Browse servers": a dialog listing the MCP registries' entries (GET /api/registry/servers),
// with a search box, and for each entry its name, description, version, transports and what
// installing it asks for.  Registry data is untrusted: it goes into the page as text only.
// (Installing comes with the install routes; this view only lists.)

import { el } from "./dom.js";
import { fetchJson } from "./errors.js";

const SEARCH_DELAY_MS = 300;
const WHERE = { url: "URL" };

/** The button that opens the dialog (made once by the tools panel). */
export function browseServersButton(configUrl) {
  const url = new URL("registry/servers", new URL(configUrl, location.href));
  return el("button", { type: "button", class: "btn browse-servers", text: "Browse servers",
    title: "Servers listed in the MCP registries", onclick: () => openBrowser(url) });
}

function openBrowser(url) {
  const search = el("input", { type: "search", class: "registry-search", placeholder: "Search by name…",
    "aria-label": "Search servers", autocomplete: "off", spellcheck: "false" });
  const states = el("div", { class: "registry-states", role: "status" });
  const list = el("ul", { class: "registry-list", "aria-label": "Registry servers" });
  const dialog = el("dialog", { class: "registry-dialog", "aria-labelledby": "registry-title" },
    el("form", { method: "dialog", class: "registry-head" },
      el("h2", { id: "registry-title", text: "Browse servers" }),
      el("button", { type: "submit", class: "icon-btn", "aria-label": "Close", text: "✕" })),
    search, states, list);
  let timer = null;
  let asked = 0;
  const load = async () => {
    const mine = ++asked;
    const query = new URL(url);
    if (search.value.trim()) query.searchParams.set("search", search.value.trim());
    list.setAttribute("aria-busy", "true");
    try {
      const body = await fetchJson(query);
      if (mine !== asked) return; // a later search is on its way
      renderStates(states, body.registries || []);
      renderList(list, body.servers || []);
    } catch (exc) {
      if (mine !== asked) return;
      states.replaceChildren(el("p", { class: "alert", role: "alert", text: `Could not list the servers: ${exc.message}` }));
      list.replaceChildren();
    } finally {
      if (mine === asked) list.removeAttribute("aria-busy");
    }
  };
  search.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(load, SEARCH_DELAY_MS);
  });
  dialog.addEventListener("close", () => {
    clearTimeout(timer);
    dialog.remove();
  });
  document.body.append(dialog);
  dialog.showModal();
  search.focus();
  load();
}

function renderStates(box, registries) {
  const lines = [];
  for (const reg of registries) {
    if (reg.ok && !reg.truncated && !reg.skipped) continue;
    let text;
    if (!reg.ok && reg.fetched_at != null) text = `${reg.url} is not answering (${reg.error}); showing its answer from ${ago(reg.age_s)}.`;
    else if (!reg.ok) text = `${reg.url} could not be asked: ${reg.error}`;
    else text = reg.truncated ? `${reg.url} has more servers than shown; search to narrow them.` : "";
    if (reg.skipped) text += ` ${reg.skipped} entr${reg.skipped === 1 ? "y" : "ies"} left out (not valid server.json).`;
    lines.push(el("p", { class: reg.ok ? "muted small" : "registry-stale small", dataset: { registry: reg.url }, text: text.trim() }));
  }
  box.replaceChildren(...lines);
}

function ago(seconds) {
  if (seconds == null) return "earlier";
  if (seconds < 90) return `${Math.round(seconds)} seconds ago`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} minutes ago`;
  return `${Math.round(seconds / 3600)} hours ago`;
}

function renderList(list, servers) {
  if (!servers.length) {
    list.replaceChildren(el("li", { class: "muted", text: "No servers found." }));
    return;
  }
  list.replaceChildren(...servers.map(entryItem));
}

function entryItem(server) {
  const transports = (server.transports || []).map((t) => ({ http: "streamable HTTP", sse: "SSE", stdio: "local (stdio)" })[t] || t);
  const meta = [`v${server.version}`, transports.join(", ")].filter(Boolean).join(" · ");
  const packages = (server.packages || []).map((p) =>
    el("li", { text: `${p.registry_type} ${p.identifier}${p.version ? `@${p.version}` : ""}${p.runtime ? ` (runs with ${p.runtime})` : " (not supported)"}` }));
  return el("li", { class: "registry-entry", dataset: { name: server.name } },
    el("h3", { class: "registry-name", text: server.title ? `${server.title} (${server.name})` : server.name }),
    el("p", { class: "registry-description", text: server.description }),
    el("p", { class: "registry-meta muted small", text: meta }),
    needsList(server.needs || []),
    packages.length ? el("ul", { class: "registry-packages small", "aria-label": "Packages" }, packages) : null);
}

function needsList(needs) {
  if (!needs.length) return el("p", { class: "registry-needs small", text: "Needs nothing to connect." });
  return el("div", { class: "registry-needs small" }, el("span", { text: "Needs: " }),
    el("ul", { class: "registry-need-list" }, needs.map((need) => {
      const where = WHERE[need.where] || need.where;
      const marks = [where, need.secret ? "secret" : "", need.required ? "required" : "optional"].filter(Boolean);
      return el("li", { dataset: { need: need.name }, title: need.description || "" },
        el("strong", { text: need.name }), ` (${marks.join(", ")})`);
    })));
}
