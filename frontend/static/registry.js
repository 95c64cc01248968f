// "Browse servers": a dialog listing the MCP registries' entries (GET /api/registry/servers),
// with a search box, and for each entry its name, description, version, transports and what
// installing it asks for.  Registry data is untrusted: it goes into the page as text only.
// "Install" opens a form with a field per need (secret ones as password fields) and posts
// {name, from_registry, variables}: to /api/servers (a server of your own, from its remote) or,
// for an entry with packages only (offered to administrators), to /api/admin/servers.

import { el } from "./dom.js";
import { fetchJson, jsonBody } from "./errors.js";

const SEARCH_DELAY_MS = 300;
const WHERE = { url: "URL" };

/** The button that opens the dialog (made once by the tools panel). */
export function browseServersButton(configUrl, changed = () => {}) {
  const api = new URL(configUrl, location.href);
  const url = new URL("registry/servers", api);
  const targets = { own: new URL("servers", api), admin: new URL("admin/servers", api), changed };
  return el("button", { type: "button", class: "btn browse-servers", text: "Browse servers",
    title: "Servers listed in the MCP registries", onclick: () => openBrowser(url, targets) });
}

function openBrowser(url, targets) {
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
      renderList(list, body.servers || [], targets);
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

function renderList(list, servers, targets) {
  if (!servers.length) {
    list.replaceChildren(el("li", { class: "muted", text: "No servers found." }));
    return;
  }
  list.replaceChildren(...servers.map((server) => entryItem(server, targets)));
}

function entryItem(server, targets) {
  const transports = (server.transports || []).map((t) => ({ http: "streamable HTTP", sse: "SSE", stdio: "local (stdio)" })[t] || t);
  const meta = [`v${server.version}`, transports.join(", ")].filter(Boolean).join(" · ");
  const packages = (server.packages || []).map((p) =>
    el("li", { text: `${p.registry_type} ${p.identifier}${p.version ? `@${p.version}` : ""}${p.runtime ? ` (runs with ${p.runtime})` : " (not supported)"}` }));
  return el("li", { class: "registry-entry", dataset: { name: server.name } },
    el("h3", { class: "registry-name", text: server.title ? `${server.title} (${server.name})` : server.name }),
    el("p", { class: "registry-description", text: server.description }),
    el("p", { class: "registry-meta muted small", text: meta }),
    needsList(server.needs || []),
    packages.length ? el("ul", { class: "registry-packages small", "aria-label": "Packages" }, packages) : null,
    server.installable_by_you ? installer(server, targets) : null);
}

/** The "Install" button, and the form it opens: a name, then one field per need. */
function installer(server, targets) {
  const own = (server.remotes || []).length > 0; // a remote: a server of your own; packages only: the deployment's
  const box = el("div", { class: "registry-install" });
  const open = el("button", { type: "button", class: "btn install", text: "Install",
    "aria-label": `Install ${server.name}`, onclick: () => { open.hidden = true; box.append(installForm(server, own, targets)); } });
  box.append(open);
  return box;
}

function installForm(server, own, targets) {
  const suggested = server.name.split("/").pop().replace(/[^A-Za-z0-9_.-]/g, "-").slice(0, 55);
  const field = (label, input) => el("label", { class: "field" }, label, input);
  const fields = (server.needs || []).map((need) => {
    const attrs = { name: need.name, "data-variable": need.name, autocomplete: "off", spellcheck: "false",
      placeholder: need.placeholder || need.default || "", title: need.description || "" };
    if (need.required) attrs.required = true;
    const input = need.choices.length
      ? el("select", attrs, need.required ? null : el("option", { value: "", text: "(default)" }),
        need.choices.map((choice) => el("option", { value: choice, text: choice })))
      : el("input", { ...attrs, type: need.secret ? "password" : "text" });
    const marks = [WHERE[need.where] || need.where, need.secret ? "secret, kept sealed" : ""].filter(Boolean);
    return field(`${need.name} (${marks.join(", ")})`, input);
  });
  const message = el("p", { class: "registry-install-message small", role: "status" });
  const submit = el("button", { type: "submit", class: "btn primary", text: own ? "Install for me" : "Install for the deployment" });
  const form = el("form", { class: "registry-install-form", "aria-label": `Install ${server.name}` },
    field("Name", el("input", { name: "__name", value: suggested, required: true, maxlength: "55", autocomplete: "off" })),
    ...fields,
    el("p", { class: "muted small", text: "It starts in review: its tools wait until they are approved." }),
    submit, message);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const variables = {};
    for (const input of form.querySelectorAll("[data-variable]")) if (input.value !== "") variables[input.dataset.variable] = input.value;
    const body = { name: form.elements.namedItem("__name").value.trim(), from_registry: server.name, variables };
    submit.disabled = true;
    message.classList.remove("alert");
    message.textContent = "Installing…";
    try {
      await fetchJson(own ? targets.own : targets.admin, jsonBody("POST", body));
      message.textContent = own ? `Installed ${body.name}: approve its tools under "Add server".`
        : `Installed ${body.name}: it waits for review in the console's Tools tab.`;
      form.querySelectorAll('input[type="password"]').forEach((input) => { input.value = ""; });
      targets.changed();
    } catch (exc) {
      message.classList.add("alert");
      message.textContent = exc.message + (exc.action ? ` ${exc.action}` : "");
    } finally {
      submit.disabled = false;
    }
  });
  return form;
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
