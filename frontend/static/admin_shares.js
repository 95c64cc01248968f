// The Servers pane's share requests: users asking that one of their own servers become the
// deployment's. Approve with groups (and a compliance level) or decline with a reason; the
// server decides and says why (GET /api/admin/shares, POST .../share/approve|decline).

import { el } from "./dom.js";
import { button, call, when } from "./admin_api.js";

/** A box listing the pending requests; `changed` runs after a decision (the server list moved). */
export function shareRequests(say, changed) {
  const box = el("section", { class: "share-requests", "aria-label": "Share requests", hidden: true });
  const load = async () => {
    try {
      const { requests } = await call("GET", "/api/admin/shares");
      const pending = requests.filter((r) => r.state === "pending");
      box.hidden = !pending.length;
      box.replaceChildren(el("h3", { text: `Share requests (${pending.length})` }),
        ...pending.map((r) => requestCard(r, say, async () => { await load(); await changed(); })));
    } catch (exc) {
      say(`Could not list the share requests: ${exc.message}`);
    }
  };
  box.load = load;
  return box;
}

function requestCard(request, say, decided) {
  const path = `/api/admin/servers/${encodeURIComponent(request.server)}/share`;
  const groups = el("input", { value: "*", "aria-label": `Groups for ${request.server}`, autocomplete: "off" });
  const level = el("input", { "aria-label": `Compliance level for ${request.server}`, autocomplete: "off" });
  const reason = el("input", { "aria-label": `Reason to decline ${request.server}`, autocomplete: "off", maxlength: "500" });
  const decide = (what, body) => async () => {
    try {
      say("");
      await call("POST", `${path}/${what}`, body());
      say(`${what === "approve" ? "Shared" : "Declined"} ${request.server}.`, { ok: true });
      await decided();
    } catch (exc) {
      say(`Could not ${what} ${request.server}: ${exc.message}`);
    }
  };
  const fact = (term, value) => [el("dt", { text: term }), el("dd", { text: value || "—" })];
  return el("article", { class: "share-request", dataset: { server: request.server } },
    el("h4", { text: `${request.name} (${request.server})` }),
    el("dl", { class: "server-facts" },
      fact("Owner", request.owner), fact("URL", request.url), fact("Headers (they move with it)", request.headers.join(", ")),
      fact("Asked", when(request.requested_at)), fact("Note", request.note)),
    el("label", { class: "field" }, "Groups (comma-separated; * for everyone)", groups),
    el("label", { class: "field" }, "Compliance level", level),
    button("Approve", decide("approve", () => ({
      groups: groups.value.split(",").map((g) => g.trim()).filter(Boolean),
      compliance_level: level.value.trim() || null })), { primary: true, label: `Approve sharing ${request.server}` }),
    el("label", { class: "field" }, "Reason", reason),
    button("Decline", decide("decline", () => ({ reason: reason.value.trim() || null })),
      { danger: true, label: `Decline sharing ${request.server}` }));
}
