// The Tools pane: tools waiting for review (pending, changed) and blocked ones, with the field by
// field diff of a changed definition. Hidden characters are shown as visible escapes (⟨U+E0041⟩),
// always through textContent; Approve sends exactly the pin shown (a stale one is refused, 409).

import { el } from "./dom.js";
import { button, call, messageLine } from "./admin_api.js";

const CHANGED_AGAIN = "this tool changed again; reload to review the new definition";

// Unicode tags, zero-width and bidirectional controls, and other invisible format characters.
const HIDDEN = /[\u{E0000}-\u{E007F}\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF\u00AD\u180E\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/gu;

/** `text` as nodes, each hidden character a marked visible escape: nothing reaches the page raw. */
export function visible(text) {
  const value = typeof text === "string" ? text : JSON.stringify(text, null, 2) ?? "";
  const nodes = [];
  let last = 0;
  for (const match of value.matchAll(HIDDEN)) {
    if (match.index > last) nodes.push(document.createTextNode(value.slice(last, match.index)));
    const code = match[0].codePointAt(0).toString(16).toUpperCase().padStart(4, "0");
    nodes.push(el("mark", { class: "hidden-char", title: "a hidden character", text: `⟨U+${code}⟩` }));
    last = match.index + match[0].length;
  }
  if (last < value.length) nodes.push(document.createTextNode(value.slice(last)));
  return nodes;
}

export function mountTools(container) {
  const { node: message, say } = messageLine();
  const state = el("select", { id: "tools-state", "aria-label": "Which tools" },
    ...["pending", "changed", "blocked"].map((s) => el("option", { value: s, text: s })));
  const list = el("div", { class: "tool-review-list", "aria-live": "polite" });
  state.addEventListener("change", () => load());
  container.replaceChildren(
    el("div", { class: "pane-head" }, el("h2", { text: "Tools" }), state, button("Refresh", () => load())),
    message, list);

  async function load() {
    try {
      const { tools } = await call("GET", `/api/admin/tools?state=${encodeURIComponent(state.value)}`);
      list.replaceChildren(...(tools.length ? tools.map((tool) => review(tool, { load, say }))
        : [el("p", { class: "muted", text: `No ${state.value} tools.` })]));
    } catch (exc) {
      say(`Could not list the tools: ${exc.message}`);
    }
  }
  load();
}

function review(tool, { load, say }) {
  const path = `/api/admin/tools/${encodeURIComponent(tool.name)}`;
  const decide = (what) => async () => {
    try {
      say("");
      await call("POST", `${path}/${what}`, what === "approve" ? { pin: tool.pin } : {});
      say(`${tool.name}: ${what === "approve" ? "approved" : "blocked"}.`, { ok: true });
      await load();
    } catch (exc) {
      say(exc.status === 409 ? `${tool.name}: ${CHANGED_AGAIN}` : `Could not ${what} ${tool.name}: ${exc.message}`);
    }
  };
  const flags = (tool.flags || []).map((f) => el("li", {}, el("strong", { text: f.kind.replaceAll("_", " ") }),
    ` in ${f.field}`, f.detail ? ": " : "", ...(f.detail ? visible(f.detail) : [])));
  const diff = (tool.diff || []).map((d) => el("tr", {},
    el("th", { scope: "row", text: d.field }),
    el("td", {}, el("pre", {}, ...visible(d.before ?? ""))),
    el("td", {}, el("pre", {}, ...visible(d.after ?? "")))));
  return el("article", { class: "tool-review", dataset: { name: tool.name, state: tool.state } },
    el("header", { class: "server-head" }, el("h3", {}, ...visible(tool.name)),
      el("span", { class: `server-status status-${tool.state}`, text: tool.state })),
    el("p", { class: "muted small" }, "server ", ...visible(tool.server), " · pin ",
      el("code", { text: (tool.pin || "").slice(0, 16) }),
      tool.approved_pin ? ` · approved pin ${tool.approved_pin.slice(0, 16)}` : ""),
    flags.length ? el("ul", { class: "alert small flags" }, ...flags) : null,
    diff.length ? el("table", { class: "tool-diff" },
      el("thead", {}, el("tr", {}, el("th", { text: "Field" }), el("th", { text: "Before" }), el("th", { text: "After" }))),
      el("tbody", {}, ...diff))
      : el("details", {}, el("summary", { text: "Definition" }), el("pre", {}, ...visible(tool.definition ?? {}))),
    el("div", { class: "server-actions" },
      button("Approve", decide("approve"), { primary: true, label: `Approve ${tool.name}` }),
      tool.state !== "blocked" ? button("Block", decide("block"), { danger: true, label: `Block ${tool.name}` }) : null));
}
