// The Users pane: who has used the host, their groups and where each comes from, when last seen,
// their open sessions, API tokens and own server connections; revoke tokens, close sessions.

import { el } from "./dom.js";
import { button, call, messageLine, when } from "./admin_api.js";

export function mountUsers(container) {
  const { node: message, say } = messageLine();
  const list = el("div", { class: "user-list", "aria-live": "polite" });
  container.replaceChildren(
    el("div", { class: "pane-head" }, el("h2", { text: "Users" }), button("Refresh", () => load())),
    message, list);

  async function load() {
    try {
      const { users } = await call("GET", "/api/admin/users");
      list.replaceChildren(...(users.length ? users.map((user) => row(user, { load, say }))
        : [el("p", { class: "muted", text: "No user has been seen yet." })]));
    } catch (exc) {
      say(`Could not list the users: ${exc.message}`);
    }
  }
  load();
}

function row(user, { load, say }) {
  const revoke = (what, label) => button(label, async () => {
    if (!window.confirm(`${label} of ${user.email}? This takes effect at once, on every app process.`)) return;
    try {
      await call("POST", `/api/admin/users/${encodeURIComponent(user.email)}/revoke`, { [what]: true });
      say(`${label}: done for ${user.email}.`, { ok: true });
      await load();
    } catch (exc) {
      say(`Could not revoke: ${exc.message}`);
    }
  }, { danger: true, label: `${label} of ${user.email}` });
  const groups = user.groups.map((g) => el("span", { class: "badge", title: `from ${g.source}`, text: `${g.name} (${g.source})` }));
  const fact = (term, ...value) => [el("dt", { text: term }), el("dd", {}, ...value)];
  return el("article", { class: "user-card", dataset: { email: user.email } },
    el("header", { class: "server-head" }, el("h3", { text: user.email }),
      user.admin ? el("span", { class: "badge", text: "admin" }) : null),
    el("dl", { class: "server-facts" },
      fact("Groups", ...(groups.length ? groups : ["—"])),
      fact("Last seen", when(user.last_seen)),
      fact("Open sessions", String(user.open_sessions)),
      fact("API tokens", user.api_tokens.length
        ? user.api_tokens.map((t) => `${t.name} (last used ${when(t.last_used_at)})`).join("; ") : "none"),
      fact("Connected servers", user.connected_servers.join(", ") || "none")),
    el("div", { class: "server-actions" }, revoke("tokens", "Revoke API tokens"), revoke("sessions", "Close sessions")));
}
