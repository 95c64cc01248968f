// The Servers pane: every server with where it comes from, its status and tools by trust state;
// restart, switch off and on; add, edit and remove the console's own servers, after a live check.

import { el } from "./dom.js";
import { button, call, messageLine } from "./admin_api.js";
import { shareRequests } from "./admin_shares.js";

const FORM_FIELDS = ["name", "command", "args", "url", "description", "groups", "compliance_level", "trust", "enabled"];
const STATES = ["approved", "pending", "changed", "blocked"];

export function mountServers(container) {
  const { node: message, say } = messageLine();
  const list = el("div", { class: "server-list", "aria-live": "polite" });
  const form = serverForm(async () => { form.hidden = true; await load(); }, say);
  const add = button("Add a server", () => form.open(null), { primary: true });
  const shares = shareRequests(say, () => load());
  container.replaceChildren(
    el("div", { class: "pane-head" }, el("h2", { text: "Servers" }), add,
      button("Refresh", () => { shares.load(); load(); })),
    message, shares, form, list);
  shares.load();
  let polling = null;

  async function load() {
    try {
      const { servers } = await call("GET", "/api/admin/servers");
      list.replaceChildren(...servers.map((server) => card(server, { load, say, edit: form.open })));
      clearTimeout(polling);
      if (servers.some((s) => s.status === "starting")) polling = setTimeout(load, 1000);
    } catch (exc) {
      say(`Could not list the servers: ${exc.message}`);
    }
  }
  form.hidden = true;
  load();
}

function card(server, { load, say, edit }) {
  const act = (what, run) => async () => {
    try {
      say("");
      await run();
      await load();
    } catch (exc) {
      say(`Could not ${what} ${server.name}: ${exc.message}`);
    }
  };
  const path = `/api/admin/servers/${encodeURIComponent(server.name)}`;
  const actions = [
    server.enabled && button("Restart", act("restart", () => call("POST", `${path}/restart`)), { label: `Restart ${server.name}` }),
    button(server.enabled ? "Switch off" : "Switch on",
      act("switch", () => call("PATCH", path, { enabled: !server.enabled, version: server.version ?? undefined })),
      { label: `${server.enabled ? "Switch off" : "Switch on"} ${server.name}` }),
  ];
  if (server.source === "admin") {
    actions.push(button("Edit", () => edit(server), { label: `Edit ${server.name}` }));
    actions.push(button("Remove", act("remove", async () => {
      if (!window.confirm(`Remove the server "${server.name}"? Its tools go from every user's list at once.`)) return;
      await call("DELETE", path);
    }), { danger: true, label: `Remove ${server.name}` }));
  }
  const tools = STATES.map((state) => `${server.tools[state] ?? 0} ${state}`).join(" · ");
  const fact = (term, value) => [el("dt", { text: term }), el("dd", { text: value || "—" })];
  return el("article", { class: "server-card", dataset: { name: server.name, status: server.status } },
    el("header", { class: "server-head" },
      el("h3", { text: server.name }),
      el("span", { class: "badge", text: server.source }),
      el("span", { class: `server-status status-${server.status}`, text: server.status })),
    server.description ? el("p", { class: "muted small", text: server.description }) : null,
    el("dl", { class: "server-facts" },
      fact("Transport", server.transport), fact("Trust", server.trust), fact("Tools", tools),
      fact("Groups", server.groups.join(", ")), fact("Level", server.compliance_level),
      fact("Protocol", server.protocol_version)),
    server.last_error ? el("p", { class: "alert small", text: server.last_error }) : null,
    server.stderr_tail ? el("details", { class: "stderr" }, el("summary", { text: "The end of its stderr" }),
      el("pre", { text: server.stderr_tail })) : null,
    el("div", { class: "server-actions" }, ...actions.filter(Boolean)));
}

function serverForm(saved, say) {
  const input = (name, label, props = {}) => {
    const field = el(props.tag || "input", { id: `server-${name}`, name, autocomplete: "off", ...props, tag: undefined });
    return [el("label", { for: `server-${name}`, class: "label-text", text: label }), field];
  };
  const result = el("div", { class: "check-result", role: "status", "aria-live": "polite" });
  const form = el("form", { class: "server-form", "aria-label": "Server" },
    el("h3", { class: "form-title", text: "Add a server" }),
    ...input("name", "Name", { required: true, maxlength: 64, pattern: "[A-Za-z0-9_.\\-]{1,64}" }),
    ...input("command", "Command (a local server)", { placeholder: "e.g. python" }),
    ...input("args", "Arguments, one a line", { tag: "textarea", rows: 2 }),
    ...input("url", "or URL (a remote server)", { placeholder: "https://…/mcp" }),
    ...input("description", "Description"),
    ...input("groups", "Groups (comma-separated; * for everyone)", { value: "*" }),
    ...input("compliance_level", "Compliance level"),
    el("label", { for: "server-trust", class: "label-text", text: "Trust" }),
    el("select", { id: "server-trust", name: "trust" },
      el("option", { value: "review", text: "review: new and changed tools wait for an administrator" }),
      el("option", { value: "auto", text: "auto: what it shows first is approved" })),
    ...input("extra", "Other mcp.json fields (a JSON object)", { tag: "textarea", rows: 3, placeholder: '{"env": {"TOKEN": "${TOKEN}"}}' }),
    result,
    el("div", { class: "server-actions" },
      el("button", { type: "button", class: "btn", text: "Check", onclick: () => check() }),
      el("button", { type: "submit", class: "btn primary", text: "Check and save" }),
      el("button", { type: "button", class: "btn", text: "Cancel", onclick: () => { form.hidden = true; } })));
  let editing = null;
  const field = (name) => form.elements.namedItem(name);

  function body() {
    const value = (name) => field(name).value.trim();
    let extra = {};
    if (value("extra")) {
      try {
        extra = JSON.parse(value("extra"));
      } catch {
        throw new Error("Other mcp.json fields: this is not a JSON object.");
      }
    }
    const args = field("args").value.split("\n").map((a) => a.trim()).filter(Boolean);
    const groups = value("groups").split(",").map((g) => g.trim()).filter(Boolean);
    const entry = { ...extra, command: value("command") || null, args: args.length ? args : null,
      url: value("url") || null, description: value("description") || null, groups: groups.length ? groups : null,
      compliance_level: value("compliance_level") || null, trust: value("trust") };
    if (editing) return { ...entry, version: editing.version };
    return { name: value("name"), ...Object.fromEntries(Object.entries(entry).filter(([, v]) => v !== null)) };
  }

  async function check() {
    result.replaceChildren(el("span", { class: "muted", text: "Connecting…" }));
    try {
      const sent = body();
      const name = field("name").value.trim() || "new";
      const entry = Object.fromEntries(Object.entries(sent).filter(([k, v]) => v !== null && k !== "version" && k !== "name"));
      const found = await call("POST", `/api/admin/servers/${encodeURIComponent(name)}/check`, entry);
      result.replaceChildren(found.ok
        ? el("p", { class: "admin-ok", text: `Connected: ${found.tools.length} tools (${found.tools.join(", ")}).` })
        : el("p", { class: "alert", text: `The check failed (${found.status}): ${found.reason}` }),
      found.stderr_tail ? el("pre", { class: "stderr", text: found.stderr_tail }) : null);
    } catch (exc) {
      result.replaceChildren(el("p", { class: "alert", text: exc.message }));
    }
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    result.replaceChildren(el("span", { class: "muted", text: "Checking and saving…" }));
    try {
      if (editing) await call("PATCH", `/api/admin/servers/${encodeURIComponent(editing.name)}?check=true`, body());
      else await call("POST", "/api/admin/servers?check=true", body());
      say(`Saved ${editing ? editing.name : field("name").value}.`, { ok: true });
      result.replaceChildren();
      await saved();
    } catch (exc) {
      result.replaceChildren(el("p", { class: "alert", text: exc.message }));
    }
  });

  form.open = (server) => {
    editing = server;
    form.reset();
    result.replaceChildren();
    form.querySelector(".form-title").textContent = server ? `Edit ${server.name}` : "Add a server";
    field("name").disabled = Boolean(server);
    if (server) {
      const entry = server.entry || {};
      field("name").value = server.name;
      field("command").value = entry.command || "";
      field("args").value = (entry.args || []).join("\n");
      field("url").value = entry.url || "";
      field("description").value = entry.description || "";
      field("groups").value = (entry.groups || ["*"]).join(", ");
      field("compliance_level").value = entry.compliance_level || "";
      field("trust").value = server.trust === "auto" ? "auto" : "review";
      const rest = Object.fromEntries(Object.entries(entry).filter(([k]) => !FORM_FIELDS.includes(k)));
      field("extra").value = Object.keys(rest).length ? JSON.stringify(rest, null, 2) : "";
    }
    form.hidden = false;
    field(server ? "command" : "name").focus();
  };
  return form;
}
