// For administrators: re-read every config file (POST /api/admin/reload) and
// say what happened: the refusal and its reason when a file is broken (the
// running configuration stays), else which servers changed.

import { el } from "./dom.js";
import { ApiError, fetchJson } from "./errors.js";

/** The button and its result line; `onReloaded()` runs after a reload that took. */
export function reloadControl(configUrl, onReloaded) {
  const url = new URL("admin/reload", new URL(configUrl, location.href));
  const result = el("p", { class: "reload-result small", role: "status", hidden: true });
  const button = el("button", { type: "button", class: "btn reload-config", text: "Reload configuration",
    title: "Read mcp.json, llmconfig.yml, groups.yml and the other config files again" });
  const show = (kind, text, action) => {
    result.hidden = false;
    result.dataset.kind = kind;
    result.setAttribute("role", kind === "refused" ? "alert" : "status");
    result.replaceChildren(el("span", { text }), action ? el("span", { class: "muted", text: ` ${action}` }) : "");
  };
  button.addEventListener("click", async () => {
    button.disabled = true;
    show("working", "Reloading…");
    try {
      const body = await fetchJson(url, { method: "POST" });
      await onReloaded?.(); // "done" once the page has the new configuration (a New chat then takes its default)
      show("done", describe(body));
    } catch (exc) {
      if (exc instanceof ApiError && exc.status) show("refused", `Refused: ${exc.message}.`, exc.action);
      else show("refused", "Could not reload: the server could not be reached.", "Check that the server is running.");
    } finally {
      button.disabled = false;
    }
  });
  return el("div", { class: "reload" }, button, result);
}

/** "Reloaded at 14:02:05: toolbox restarted; 2 servers unchanged." from `{servers: {name: change}, errors}`. */
function describe(body) {
  const entries = Object.entries(body?.servers || {});
  const changed = entries.filter(([, change]) => change !== "unchanged").map(([name, change]) => `${name} ${change}`);
  const same = entries.length - changed.length;
  const parts = [...changed, ...(same ? [`${same} server${same === 1 ? "" : "s"} unchanged`] : [])];
  const errors = (body?.errors || []).length;
  const time = new Date().toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  return `Reloaded at ${time}${parts.length ? `: ${parts.join("; ")}` : ""}.`
    + (errors ? ` ${errors} configuration error${errors === 1 ? "" : "s"} remain (listed above).` : "");
}
