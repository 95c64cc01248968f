// "Add server": a dialog in the tools panel where a user adds a remote MCP server of their own
// (POST /api/servers: name, URL, transport, headers), sees their servers, signs in to one that asks
// for it (the Connect flow), and approves each tool (its pin shown; Approve sends exactly that pin). Server data is untrusted: textContent only,
// hidden characters shown as visible escapes.

import { visible } from "./admin_tools.js";
import { el } from "./dom.js";
import { fetchJson, jsonBody } from "./errors.js";

/** The button that opens the dialog; `changed` runs after a server or a tool changed. */
export function addServerButton(configUrl, changed) {
  const base = new URL("servers", new URL(configUrl, location.href));
  return el("button", { type: "button", class: "btn add-server", text: "Add server",
    title: "Add a remote MCP server of your own", onclick: () => openDialog(base, changed) });
}

const path = (base, ...parts) => `${base}/${parts.map(encodeURIComponent).join("/")}`;

const SHARE_TERMS = "If an administrator approves, this server becomes the deployment's, for the groups they choose: "
  + "it leaves your list, its tools keep their approvals, and its headers (your keys, if any) move with it "
  + "and are sent for everyone who uses it. Remove a personal key first if that is not what you want.";

/** "Ask to share": its state when asked, else a button opening the terms and a note. */
function shareBox(server, ask) {
  const share = server.share;
  if (share?.state === "pending") return el("p", { class: "muted small share-state", text: "Waiting for an administrator to share it." });
  const box = el("div", { class: "share-box" });
  if (share?.state === "declined") {
    box.append(el("p", { class: "small share-state", text: `Sharing was declined${share.reason ? `: ${share.reason}` : "."}` }));
  }
  const note = el("textarea", { rows: "2", maxlength: "500", "aria-label": "A note to the administrator" });
  const form = el("form", { class: "share-form", hidden: true, "aria-label": `Share ${server.name}` },
    el("p", { class: "small", text: SHARE_TERMS }), note,
    el("button", { type: "submit", class: "btn primary", text: "Send request" }));
  form.addEventListener("submit", (event) => { event.preventDefault(); ask(note.value.trim()); });
  box.append(el("button", { type: "button", class: "btn", text: "Ask to share",
    onclick: () => { form.hidden = false; note.focus(); } }), form);
  return box;
}

function openDialog(base, changed) {
  const input = (name, label, attrs = {}) => el("label", { class: "field" }, label,
    el("input", { name, autocomplete: "off", spellcheck: "false", ...attrs }));
  const transport = el("select", { name: "transport", "aria-label": "Transport" },
    el("option", { value: "", text: "detect" }), el("option", { value: "http", text: "streamable HTTP" }),
    el("option", { value: "sse", text: "SSE" }));
  const headers = el("textarea", { name: "headers", rows: "2", placeholder: "X-Api-Key: …", spellcheck: "false",
    "aria-label": "Headers, one per line" });
  const message = el("p", { class: "user-server-message", role: "status" });
  const list = el("div", { class: "user-server-list", "aria-live": "polite" });
  const form = el("form", { class: "user-server-form" },
    input("name", "Name", { required: true, maxlength: "55" }), input("url", "URL", { required: true, type: "url" }),
    el("label", { class: "field" }, "Transport", transport), el("label", { class: "field" }, "Headers", headers),
    el("button", { type: "submit", class: "btn primary", text: "Add" }));
  const dialog = el("dialog", { class: "user-server-dialog", "aria-labelledby": "user-server-title" },
    el("form", { method: "dialog", class: "registry-head" },
      el("h2", { id: "user-server-title", text: "Your servers" }),
      el("button", { type: "submit", class: "icon-btn", "aria-label": "Close", text: "✕" })),
    form, message, list);
  const say = (text, bad = false) => { message.textContent = text; message.classList.toggle("alert", bad); };

  const load = async () => {
    const { servers } = await fetchJson(base);
    const blocks = [];
    for (const server of servers) {
      const { tools } = await fetchJson(path(base, server.name, "tools"));
      blocks.push(serverBlock(server, tools));
    }
    list.replaceChildren(...blocks);
    return servers.some((server) => server.status === "starting");
  };
  const settle = async () => { // a server just added connects in a moment: list again until it has
    for (let tries = 0; tries < 60 && dialog.open && (await load()); tries++) await new Promise((r) => setTimeout(r, 500));
  };
  const act = async (work, done) => {
    try {
      await work();
      say(typeof done === "function" ? done() : done);
      changed();
      await settle();
    } catch (exc) {
      say(exc.message + (exc.action ? ` ${exc.action}` : ""), true);
    }
  };
  const serverBlock = (server, tools) => el("section", { class: "user-server", dataset: { server: server.name } },
    el("h3", {}, ...visible(server.name), el("span", { class: "muted small", text: ` ${server.status} · ${server.url}` })),
    server.sign_in && !server.sign_in.connected ? el("a", { class: "btn primary sign-in", text: "Sign in",
      href: path(base, server.server, "connect"), title: "The server asks you to sign in (OAuth); you come back here" }) : "",
    el("button", { type: "button", class: "btn danger", text: "Remove",
      onclick: () => act(() => fetchJson(path(base, server.name), { method: "DELETE" }), `Removed ${server.name}.`) }),
    shareBox(server, (note) => act(() => fetchJson(path(base, server.name, "share"), jsonBody("POST", { note: note || null })),
      `Asked to share ${server.name}: an administrator decides.`)),
    el("ul", { class: "user-server-tools" }, tools.map((tool) => el("li", { dataset: { tool: tool.tool, state: tool.state } },
      el("strong", {}, ...visible(tool.tool)), " ",
      el("span", { class: "tool-state", text: tool.state }), " ",
      el("code", { class: "tool-pin", title: "pin", text: tool.pin.slice(0, 12) }), " ",
      el("span", { class: "muted small" }, ...visible(tool.definition?.description ?? "")),
      tool.flags.length ? el("span", { class: "alert small", text: ` ${tool.flags.length} hidden-character finding(s)` }) : "",
      tool.state === "approved" ? "" : el("button", { type: "button", class: "btn approve", text: "Approve",
        onclick: () => act(() => fetchJson(path(base, server.name, "tools", tool.tool, "approve"),
          jsonBody("POST", { pin: tool.pin })), `Approved ${tool.tool}.`) })))));

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const body = { name: data.get("name").trim(), url: data.get("url").trim() };
    if (data.get("transport")) body.transport = data.get("transport");
    const pairs = String(data.get("headers")).split("\n").map((line) => line.split(":"))
      .filter((parts) => parts.length > 1 && parts[0].trim());
    if (pairs.length) body.headers = Object.fromEntries(pairs.map(([k, ...v]) => [k.trim(), v.join(":").trim()]));
    say("Checking the server…");
    let signIn = false;
    act(async () => { signIn = Boolean((await fetchJson(base, jsonBody("POST", body))).sign_in); },
      () => signIn ? `Added ${body.name}: it asks you to sign in; press Sign in, then approve its tools.`
        : `Added ${body.name}: approve its tools to use them.`)
      .then(() => { if (!message.classList.contains("alert")) form.reset(); });
  });
  dialog.addEventListener("close", () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
  settle().catch((exc) => say(exc.message, true));
}
