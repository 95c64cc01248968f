// The admin console's Audit tab: the audit log's records with filters, one record's detail,
// and a download (JSON lines) of the filtered records. Every rule is the server's: this only
// calls GET /api/admin/audit and links to /api/admin/audit/export. Records are shown as text.

import { el, prettyJson } from "./dom.js";

const FILTERS = [
  ["user", "User", "text", "ann@example.com"],
  ["server", "Server", "text", ""],
  ["tool", "Tool", "text", "server_tool"],
  ["since", "Since", "date", ""],
  ["until", "Before", "date", ""],
];
const DECISIONS = [["", "any decision"], ["allow", "allowed"], ["deny", "denied"], ["error", "failed"]];
const PAGE = 100;

async function fetchJson(url) {
  const res = await fetch(url, { credentials: "same-origin" });
  if (!res.ok) {
    const problem = (await res.json().catch(() => null))?.error;
    throw new Error(problem ? `${problem.message}${problem.action ? ` ${problem.action}` : ""}` : `The server answered ${res.status}.`);
  }
  return res.json();
}

function summary(record) {
  if (record.tool) return record.tool;
  if (record.action) return `${record.action}${record.server ? ` ${record.server}` : ""}`;
  return record.server || "";
}

/** Mount the Audit tab into `container` (an element the console owns). */
export function mountAudit(container) {
  const inputs = {};
  const fields = FILTERS.map(([name, label, type, placeholder]) => {
    inputs[name] = el("input", { name, type, placeholder: placeholder || undefined, "aria-label": label });
    return el("label", { class: "audit-filter" }, `${label} `, inputs[name]);
  });
  inputs.decision = el("select", { name: "decision", "aria-label": "Decision" },
    DECISIONS.map(([value, text]) => el("option", { value, text })));
  const form = el("form", { class: "audit-filters", role: "search" },
    fields, el("label", { class: "audit-filter" }, "Decision ", inputs.decision),
    el("button", { type: "submit", class: "btn", text: "Show" }));
  const download = el("a", { class: "btn audit-download", text: "Download (JSON lines)", download: "audit.jsonl",
    href: "/api/admin/audit/export" });
  const errorBox = el("p", { class: "error audit-error", role: "alert", hidden: true });
  const rows = el("tbody");
  const table = el("table", { class: "audit-table" },
    el("thead", {}, el("tr", {}, ["Seq", "Time", "Kind", "User", "What", "Decision"].map((h) => el("th", { text: h })))),
    rows);
  const more = el("button", { type: "button", class: "btn audit-more", text: "Older records", hidden: true });
  const detail = el("pre", { class: "audit-detail", "aria-label": "Record", hidden: true });
  container.replaceChildren(el("section", { class: "audit" }, form, download, errorBox, table, more, detail));

  let cursor = null;

  function query() {
    const params = new URLSearchParams();
    for (const [name, input] of Object.entries(inputs)) {
      const value = input.value.trim();
      if (value) params.set(name, value);
    }
    return params;
  }

  function row(record) {
    const tr = el("tr", { class: "audit-row", tabindex: "0", dataset: { seq: String(record.seq), decision: record.decision || "" } },
      el("td", { text: String(record.seq) }),
      el("td", { text: new Date(record.ts).toLocaleString() }),
      el("td", { text: record.kind }),
      el("td", { text: record.user || "" }),
      el("td", { text: summary(record) }),
      el("td", { text: record.decision || "" }));
    const show = () => {
      for (const other of rows.querySelectorAll(".selected")) other.classList.remove("selected");
      tr.classList.add("selected");
      detail.textContent = prettyJson(record);
      detail.hidden = false;
    };
    tr.addEventListener("click", show);
    tr.addEventListener("keydown", (event) => { if (event.key === "Enter") show(); });
    return tr;
  }

  async function load(older) {
    const params = query();
    download.href = `/api/admin/audit/export${params.size ? `?${params}` : ""}`;
    params.set("limit", String(PAGE));
    if (older && cursor) params.set("cursor", String(cursor));
    try {
      const page = await fetchJson(`/api/admin/audit?${params}`);
      const made = page.records.map(row);
      if (older) rows.append(...made);
      else {
        rows.replaceChildren(...(made.length ? made : [el("tr", {}, el("td", { colspan: "6", class: "muted", text: "No records." }))]));
        detail.hidden = true;
      }
      cursor = page.next_cursor;
      more.hidden = !cursor;
      errorBox.hidden = true;
    } catch (exc) {
      errorBox.textContent = `Could not read the audit log: ${exc.message}`;
      errorBox.hidden = false;
    }
  }

  form.addEventListener("submit", (event) => { event.preventDefault(); load(false); });
  more.addEventListener("click", () => load(true));
  load(false);
  return { reload: () => load(false) };
}
