// The tools panel (servers, their tools, the compliance level) and the
// model picker, both fed by GET /api/config.  Re-polls while a server is
// still starting.

import { connectControls } from "./connect.js";
import { el } from "./dom.js";
import { fetchJson } from "./errors.js";
import { browseServersButton } from "./registry.js";
import { addServerButton } from "./user_servers.js";
import { reloadControl } from "./reload.js";
import { ToolFilter } from "./toolfilter.js";

const POLL_MS = 2500;
const RETRY_MS = 5000;
const OPEN_UP_TO = 20; // a server with more tools starts collapsed (its count shows): 300 tools were 13,500 px
const STATUS_TEXT = { starting: "starting…", ready: "ready", failed: "failed", disabled: "disabled", needs_auth: "connect" };

/** Whether the model may be given this tool (an app-only tool's visibility lacks "model"). */
// The model's tools: not for an app only, and approved by an administrator (the others wait, greyed).
const approved = (tool) => !tool.trust || tool.trust === "approved";
const forModel = (tool) => approved(tool) && (!tool.app?.visibility || tool.app.visibility.includes("model"));

export class ToolsPanel {
  constructor({ configUrl, servers, status, summary, compliance, complianceNote, model, modelNote, filter, filterNote, onConfig }) {
    Object.assign(this, { configUrl, serversBox: servers, statusBox: status, summary, complianceSelect: compliance,
      complianceNote, modelSelect: model, modelNote, onConfig });
    this.filter = filter ? new ToolFilter({ input: filter, box: servers, note: filterNote }) : null;
    this.reloader = null; // administrators' Reload button, made once so that its result stays through redraws
    this.config = null;
    this.excluded = new Set(); // qualified names the user unticked
    this.timer = null;
    this.levelsShown = false;
    compliance.addEventListener("change", () => {
      this._describeLevel();
      this.load();
    });
    this.modelPicked = false; // by the user's hand (not a conversation's model put back): New chat keeps it
    model.addEventListener("change", (e) => {
      this.modelPicked = e.isTrusted;
      this._describeModel();
      if (this.config) this._renderStatus();
    });
  }

  get complianceLevel() {
    return this.complianceSelect.value || undefined;
  }

  get model() {
    return this.modelSelect.value || undefined;
  }

  /** Qualified names to send as `tools`, or undefined when every tool is ticked. */
  get selectedTools() {
    if (!this.config) return undefined;
    const names = this.config.tools.filter(forModel).map((t) => t.name);
    if (!names.some((n) => this.excluded.has(n))) return undefined;
    return names.filter((n) => !this.excluded.has(n));
  }

  /** Tick the tools that handle an attached file (the upload's `suggested_tools`). */
  include(names) {
    if (!names?.length) return;
    for (const name of names) this.excluded.delete(name);
    if (this.config) this._renderServers();
  }

  async load() {
    clearTimeout(this.timer);
    const url = new URL(this.configUrl, location.href);
    if (this.complianceLevel) url.searchParams.set("compliance_level", this.complianceLevel);
    try {
      const res = await fetch(url, { credentials: "same-origin" });
      if (!res.ok) throw new Error(`the server answered ${res.status}`);
      this.config = await res.json();
    } catch (exc) {
      this.serversBox.replaceChildren(el("p", { class: "alert", role: "alert", text: `Could not load the tools (${exc.message}); retrying…` }));
      this.timer = setTimeout(() => this.load(), RETRY_MS);
      return;
    }
    this._renderLevels();
    this._renderModels();
    this._renderServers();
    this.onConfig?.(this.config);
    if (this.config.servers.some((s) => s.status === "starting")) this.timer = setTimeout(() => this.load(), POLL_MS);
  }

  _renderLevels() {
    if (this.levelsShown) return;
    this.levelsShown = true;
    for (const level of this.config.compliance_levels || []) {
      this.complianceSelect.append(el("option", { value: level.name, text: level.name, title: level.description || undefined }));
    }
    this.complianceSelect.closest(".field").hidden = !(this.config.compliance_levels || []).length;
    this._describeLevel();
  }

  _describeLevel() {
    const level = (this.config?.compliance_levels || []).find((l) => l.name === this.complianceSelect.value);
    this.complianceNote.textContent = level
      ? level.description || `Only servers and models allowed at ${level.name} are offered.`
      : "No level chosen: every tool you may use is offered.";
  }

  /** A new chat starts on the configuration's default model (a reload may have changed it, or the
   * model in use failed), unless the user picked one by hand. */
  resetModel() {
    if (this.modelPicked || !this.config) return;
    this._renderModels({ fresh: true });
  }

  _renderModels({ fresh = false } = {}) {
    const previous = fresh ? null : this.modelSelect.value;
    const models = this.config.models || [];
    this.modelSelect.replaceChildren(...models.map((m) => {
      let text = m.name;
      if (m.demo) text += " (demo)";
      if (!m.available) text += ` — unavailable${m.reason ? `: ${m.reason}` : ""}`;
      else if (m.failing) text += ` — not working: ${m.failing}`;
      const title = !m.available ? m.reason || "unavailable" : m.failing ? `Its last call failed: ${m.failing}` : m.description || m.name;
      return el("option", { value: m.name, text, disabled: !m.available, title,
        dataset: { demo: m.demo ? "true" : "false", failing: m.failing ? "true" : "false" } });
    }));
    const usable = (name) => models.some((m) => m.name === name && m.available);
    const pick = [previous, this.config.default_model].find(usable) ?? models.find((m) => m.available)?.name;
    if (pick) this.modelSelect.value = pick;
    this.modelSelect.disabled = !models.some((m) => m.available);
    this._describeModel();
  }

  _describeModel() {
    const model = (this.config?.models || []).find((m) => m.name === this.modelSelect.value);
    const children = [];
    if (!model) {
      children.push(el("span", { class: "badge badge-warn", text: "No model available" }));
    } else {
      if (model.demo) children.push(el("span", { class: "badge badge-demo", text: "demo" }), " ");
      if (model.failing) children.push(el("span", { class: "badge badge-warn", text: "not working" }), " ");
      children.push(el("span", { text: model.failing ? `Its last call failed: ${model.failing}` : model.description || "" }));
    }
    const note = this.config?.default_note;
    if (note && model?.name === this.config.default_model) { // said first: the note is cut at the line's end
      children.unshift(el("span", { class: "badge badge-warn", text: "default not working" }), " ",
        el("span", { class: "model-default-note", text: `${note} ` }));
    }
    const unavailable = (this.config?.models || []).filter((m) => !m.available);
    if (unavailable.length) {
      children.push(el("span", { class: "muted", text: ` · ${unavailable.length} unavailable` }));
    }
    this.modelNote.replaceChildren(...children);
    this.modelNote.title = [...(note ? [note] : []), ...unavailable.map((m) => `${m.name}: ${m.reason || "unavailable"}`)].join("\n");
  }

  _renderServers() {
    const tools = new Map((this.config.tools || []).map((t) => [t.name, t]));
    const servers = this.config.servers || [];
    this._renderStatus();
    const problems = this._configProblems();
    if (!servers.length) {
      this.serversBox.replaceChildren(...(problems ? [problems] : []),
        el("p", { class: "muted", text: "No tool servers are configured for you." }));
      this.summary.textContent = "";
      return;
    }
    const openState = new Map([...this.serversBox.querySelectorAll("details.server")]
      .map((d) => [d.dataset.server, d.open && !ToolFilter.openedByFilter(d)]));
    this.serversBox.replaceChildren(...(problems ? [problems] : []),
      ...servers.map((server) => this._serverNode(server, tools, openState.get(server.name))));
    this.filter?.apply();
    this._summarize();
  }

  _serverNode(server, tools, wasOpen) {
    const names = (server.tools || []).filter((n) => tools.has(n) && forModel(tools.get(n)));
    // Tools only the server's own app may call: the model never gets them, so no checkbox and no count.
    const appOnly = (server.tools || []).filter((n) => tools.has(n) && approved(tools.get(n)) && !forModel(tools.get(n))).map((n) => tools.get(n));
    const waiting = (server.tools || []).filter((n) => tools.has(n) && !approved(tools.get(n))).map((n) => tools.get(n));
    const all = el("input", { type: "checkbox", class: "server-all", "aria-label": `Use every tool of ${server.name}`,
      disabled: !names.length });
    const boxes = names.map((name) => {
      const tool = tools.get(name);
      const box = el("input", { type: "checkbox", checked: !this.excluded.has(name), dataset: { tool: name } });
      box.addEventListener("change", () => {
        if (box.checked) this.excluded.delete(name);
        else this.excluded.add(name);
        syncAll();
        this._summarize();
      });
      const search = [name, tool.tool, tool.title, tool.description].filter(Boolean).join(" ").toLowerCase();
      return el("li", { class: "tool-item", title: tool.description || "", dataset: { search } },
        el("label", {}, box, " ", el("span", { class: "tool-label", text: tool.title || tool.tool || name }),
          tool.requires_approval ? el("span", { class: "badge", title: "You are asked before this tool runs", text: "asks first" }) : null,
          null),
        tool.description ? el("small", { class: "tool-desc muted", text: tool.description }) : null);
    });
    const syncAll = () => {
      const on = names.filter((n) => !this.excluded.has(n)).length;
      all.checked = names.length > 0 && on === names.length;
      all.indeterminate = on > 0 && on < names.length;
    };
    all.addEventListener("change", () => {
      for (const name of names) (all.checked ? this.excluded.delete(name) : this.excluded.add(name));
      for (const li of boxes) li.querySelector("input").checked = all.checked;
      syncAll();
      this._summarize();
    });
    syncAll();
    const status = server.status || "starting";
    const open = wasOpen ?? (status !== "disabled" && names.length <= OPEN_UP_TO);
    const node = el("details", { class: "server", dataset: { server: server.name, status }, open },
      el("summary", {},
        el("span", { class: "status-dot", "aria-hidden": "true" }),
        el("span", { class: "server-name", text: server.name, title: server.name }),
        el("span", { class: "server-status", text: STATUS_TEXT[status] || status }),
        names.length ? el("span", { class: "tool-count muted small", text: `${names.length} tool${names.length === 1 ? "" : "s"}` }) : null,
        server.compliance_level ? el("span", { class: "badge", text: server.compliance_level }) : null),
      el("div", { class: "server-body" },
        server.description ? el("p", { class: "server-desc muted small", text: server.description }) : null,
        status === "failed" || server.reason ? el("p", { class: "server-reason", role: status === "failed" ? "alert" : undefined,
          text: server.reason || "The server did not start." }) : null,
        status === "failed" && server.stderr_tail ? el("details", { class: "server-stderr" },
          el("summary", { class: "small", text: server.stderr_log ? `Its stderr (${server.stderr_log})` : "Its stderr" }),
          el("pre", { class: "small", text: server.stderr_tail })) : null,
        status === "failed" && this.config.user?.admin ? this._restartButton(server.name) : null,
        connectControls(server, () => this.load()),
        names.length ? el("label", { class: "check all-toggle" }, all, " All tools") : null,
        names.length ? el("ul", { class: "tool-list" }, boxes)
          : el("p", { class: "muted small", text: status === "starting" ? "Waiting for the server…" : "No tools." }),
        appOnly.length ? el("div", { class: "app-tools muted" }, `For its app only (the model never gets these):`,
          el("ul", {}, appOnly.map((t) => el("li", { class: "app-tool", title: t.description || "", text: t.title || t.tool || t.name })))) : null,
        waiting.length ? el("ul", { class: "tool-list tools-waiting" }, waiting.map((t) => el("li", {
          class: "tool-item tool-waiting", dataset: { tool: t.name, trust: t.trust },
          title: `This tool is ${t.trust === "changed" ? "changed" : t.trust === "blocked" ? "blocked" : "new"}: it is not used until an administrator approves it` },
          el("label", {}, el("input", { type: "checkbox", disabled: true, "aria-label": `${t.name}: waiting for an administrator` }), " ",
            el("span", { class: "tool-label", text: t.title || t.tool || t.name }), " ",
            el("span", { class: "badge", text: t.trust === "blocked" ? "blocked" : "waiting for an administrator" }))))) : null));
    return node;
  }

  /** On top of a long panel: how many servers are in which state (the
   * failed ones named, each a link to its entry) and what they offer. */
  _renderStatus() {
    if (!this.statusBox) return;
    const servers = this.config.servers || [];
    const counts = new Map();
    for (const server of servers) {
      const status = server.status || "starting";
      counts.set(status, (counts.get(status) || 0) + 1);
    }
    const order = ["ready", "starting", "failed", "disabled"];
    const states = [...counts.keys()].sort((a, b) => (order.indexOf(a) + 1 || 99) - (order.indexOf(b) + 1 || 99));
    const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
    const children = [el("p", { class: "status-line" }, el("strong", { text: plural(servers.length, "server") }),
      servers.length ? `: ${states.map((st) => `${counts.get(st)} ${STATUS_TEXT[st] || st}`).join(", ")}` : "")];
    const failed = servers.filter((sv) => sv.status === "failed");
    if (failed.length) {
      const links = failed.map((sv) => el("button", { type: "button", class: "link-btn", text: sv.name,
        title: sv.reason || "The server did not start.", onclick: () => this._reveal(sv.name) }));
      children.push(el("p", { class: "status-failed" }, "Failed: ",
        ...links.flatMap((link, i) => (i ? [", ", link] : [link]))));
    }
    const resources = (this.config.resources || []).length + (this.config.resource_templates || []).length;
    const offers = [plural((this.config.tools || []).filter(forModel).length, "tool"), plural(resources, "resource"),
      plural((this.config.prompts || []).length, "prompt")];
    children.push(el("p", { class: "status-offers muted small", text: offers.join(" · ") }));
    const gw = (this.config.models || []).find((m) => m.name === this.modelSelect?.value)?.gateway;
    if (gw?.active) children.push(el("p", { class: "status-gateway muted small", text: `Tool gateway on: ${plural(gw.tools, "tool")} (about ${gw.tool_tokens.toLocaleString()} tokens of definitions) sit behind search, describe and call` }));
    if (this.config.user?.admin) {
      this.reloader ??= reloadControl(this.configUrl, () => this.load());
      children.push(this.reloader);
    }
    children.push((this.browser ??= browseServersButton(this.configUrl, () => this.load())), (this.adder ??= addServerButton(this.configUrl, () => this.load())));
    this.statusBox.replaceChildren(...children);
    this.statusBox.dataset.failed = String(failed.length);
  }

  _reveal(name) {
    const node = [...this.serversBox.querySelectorAll("details.server")].find((d) => d.dataset.server === name);
    if (!node) return;
    node.open = true;
    node.scrollIntoView({ block: "start" });
    node.querySelector("summary")?.focus();
  }

  /** Broken config files: every error for an administrator, a short note for others. */
  _configProblems() {
    const errors = this.config.config_errors || [];
    if (errors.length) {
      return el("div", { class: "alert config-errors", role: "alert" }, el("strong", { text: "Configuration errors" }),
        el("ul", {}, errors.map((e) => el("li", { text: e }))));
    }
    return this.config.config_note ? el("p", { class: "alert config-note", text: this.config.config_note }) : null;
  }

  /** For administrators: stop a failed server and start it afresh. */
  _restartButton(name) {
    const button = el("button", { type: "button", class: "btn server-restart", text: "Restart",
      title: `Restart ${name} (after fixing what made it fail)`, onclick: async () => {
        button.disabled = true;
        const url = new URL(`servers/${encodeURIComponent(name)}/restart`, new URL(this.configUrl, location.href));
        try {
          await fetchJson(url, { method: "POST" });
        } catch (exc) {
          button.disabled = false;
          button.title = `Could not restart: ${exc.message}`;
          button.textContent = "Restart (failed, retry)";
          return;
        }
        this.load();
      } });
    return button;
  }

  _summarize() {
    const offered = (this.config?.tools || []).filter(forModel);
    const total = offered.length;
    const chosen = total - offered.filter((t) => this.excluded.has(t.name)).length;
    this.summary.textContent = total ? `${chosen} of ${total} tools on for this conversation` : "";
  }
}
