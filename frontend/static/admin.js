// The admin console: four tabs, each pane its own module, loaded when first shown.

import { mountServers } from "./admin_servers.js";
import { mountTools } from "./admin_tools.js";
import { mountUsers } from "./admin_users.js";

const panes = {
  servers: mountServers,
  tools: mountTools,
  users: mountUsers,
  audit: mountAuditPane,
};
const mounted = new Set();

async function mountAuditPane(container) {
  let audit;
  try {
    audit = await import("./admin_audit.js");
  } catch {
    container.replaceChildren(Object.assign(document.createElement("p"),
      { className: "muted", textContent: "The audit log is not available." }));
    return;
  }
  await audit.mountAudit(container);
}

function show(name) {
  for (const key of Object.keys(panes)) {
    const tab = document.getElementById(`tab-${key}`);
    const pane = document.getElementById(`pane-${key}`);
    const selected = key === name;
    tab.setAttribute("aria-selected", String(selected));
    tab.tabIndex = selected ? 0 : -1;
    pane.hidden = !selected;
  }
  if (!mounted.has(name)) {
    mounted.add(name);
    panes[name](document.getElementById(`pane-${name}`));
  }
  if (location.hash !== `#${name}`) history.replaceState(null, "", `#${name}`);
}

const names = Object.keys(panes);
for (const name of names) {
  const tab = document.getElementById(`tab-${name}`);
  tab.addEventListener("click", () => show(name));
  tab.addEventListener("keydown", (event) => {
    const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
    if (!step) return;
    const next = names[(names.indexOf(name) + step + names.length) % names.length];
    show(next);
    document.getElementById(`tab-${next}`).focus();
  });
}
const first = location.hash.slice(1);
show(names.includes(first) ? first : "servers");
