// Tool cards: one per tool call, inline in the answer.  States: awaiting
// (approval or an answer), running (elapsed time, progress), done, failed.

import { approvalNote } from "./approval.js";
import { el, formatBytes, formatDuration, prettyJson } from "./dom.js";

const ICONS = { awaiting: "?", running: "⚙", done: "✓", failed: "✕" };
const SUMMARY_CHARS = 160;
let clockSkewMs = null; // page clock minus server clock, once an `attached` said the server's time

/** The server's clock (ms since the epoch), as an `attached` event gives it. */
export function setServerTime(serverMs) {
  if (typeof serverMs === "number") clockSkewMs = Date.now() - serverMs;
}

/** How long ago, on the page's clock, a server-stamped moment was (0 when unknown). */
function sinceServerTime(serverMs) {
  if (typeof serverMs !== "number" || clockSkewMs === null) return 0;
  return Math.max(0, Date.now() - clockSkewMs - serverMs);
}

/** A short type label for a chip ("PNG", "PDF"), from the name or the type. */
function typeLabel(artifact) {
  const name = String(artifact.name || "");
  const dot = name.lastIndexOf(".");
  const ext = dot > 0 ? name.slice(dot + 1) : "";
  if (/^[A-Za-z0-9]{1,5}$/.test(ext)) return ext.toUpperCase();
  const sub = String(artifact.mime || "").split("/")[1] || "file";
  return sub.replace(/^x-/, "").slice(0, 5).toUpperCase();
}

export function artifactChip(artifact, onOpen) {
  return el("li", {},
    el("button", { type: "button", class: "chip chip-artifact", title: `Open ${artifact.name} in the canvas`, onclick: () => onOpen(artifact) },
      el("span", { class: "chip-type", "aria-hidden": "true", text: typeLabel(artifact) }),
      el("span", { class: "chip-name", text: artifact.name }),
      el("span", { class: "chip-meta", text: formatBytes(artifact.size) })));
}

function clip(text) {
  return text.length > SUMMARY_CHARS ? `${text.slice(0, SUMMARY_CHARS)}…` : text;
}

function firstLine(text) {
  return clip(String(text ?? "").trim().split("\n", 1)[0]);
}

function parsedJson(text) {
  const trimmed = String(text ?? "").trim();
  if (!/^[[{]/.test(trimmed)) return undefined;
  try {
    return JSON.parse(trimmed);
  } catch {
    return undefined;
  }
}

const isScalar = (v) => v === null || ["string", "number", "boolean"].includes(typeof v);

/** One line about a JSON value: its `summary`, else its first scalar fields,
 * else its keys; never a lone brace. */
function jsonSummary(value) {
  if (Array.isArray(value)) {
    const scalars = value.filter(isScalar).slice(0, 5).map((v) => JSON.stringify(v));
    return clip(`${value.length} item${value.length === 1 ? "" : "s"}${scalars.length ? `: ${scalars.join(", ")}` : ""}`);
  }
  if (typeof value.summary === "string" && value.summary.trim()) return firstLine(value.summary);
  const entries = Object.entries(value);
  if (!entries.length) return "(empty object)";
  const scalars = entries.filter(([, v]) => isScalar(v));
  if (scalars.length) return clip(scalars.slice(0, 6).map(([k, v]) => `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`).join(", "));
  return clip(`keys: ${entries.map(([k]) => k).join(", ")}`);
}

/** The one-line summary of a successful result. */
export function resultSummary(results, content) {
  const isObject = (v) => v !== null && typeof v === "object";
  if (isObject(results) && !Array.isArray(results) && typeof results.summary === "string") return firstLine(results.summary);
  const json = parsedJson(content);
  if (isObject(json)) return jsonSummary(json);
  if (String(content ?? "").trim()) return firstLine(content);
  return isObject(results) ? jsonSummary(results) : "";
}

export class ToolCard {
  constructor({ callId, tool, server, onOpenArtifact, onOpenApp }) {
    this.callId = callId;
    this.tool = tool;
    this.server = server;
    this.onOpenArtifact = onOpenArtifact;
    this.onOpenApp = onOpenApp;
    this.started = null;
    this.state = "awaiting";
    this.statusText = el("span", { class: "tool-status" });
    this.nameText = el("span", { class: "tool-name", text: tool || "tool" });
    this.serverText = el("span", { class: "tool-server", text: server ? `on ${server}` : "" });
    this.progressBar = el("progress", { class: "tool-progress-bar", "aria-label": "Progress" });
    this.progressText = el("span", { class: "tool-progress-text" });
    this.progress = el("div", { class: "tool-progress", hidden: true }, this.progressBar, this.progressText);
    this.argsPre = el("pre", { class: "json" });
    this.args = el("details", { class: "tool-args" }, el("summary", { text: "Arguments" }), this.argsPre);
    this.logs = el("ol", { class: "tool-logs", hidden: true, "aria-label": "Tool log" });
    this.interaction = el("div", { class: "tool-interaction" });
    this.result = el("div", { class: "tool-result", hidden: true });
    this.artifacts = el("ul", { class: "chips artifacts", hidden: true, "aria-label": "Files" });
    this.node = el("section", { class: "tool-card", dataset: { state: "awaiting", callId }, "aria-label": `Tool ${tool}` },
      el("header", { class: "tool-head" },
        el("span", { class: "tool-icon", "aria-hidden": "true" }),
        this.nameText, this.serverText, this.statusText),
      this.progress, this.args, this.logs, this.interaction, this.result, this.artifacts);
    this._setState("awaiting", "Waiting");
  }

  _setState(state, text) {
    this.state = state;
    this.node.dataset.state = state;
    this.node.querySelector(".tool-icon").textContent = ICONS[state] || "";
    this.statusText.textContent = text;
  }

  get open() {
    return this.state === "running" || this.state === "awaiting";
  }

  /** Prompts still open can no longer be answered; answers given stay. */
  _closePrompts() {
    for (const form of this.interaction.querySelectorAll("form")) form.remove();
  }

  abandon(reason) {
    this._closePrompts();
    this._setState("failed", reason);
  }

  setArguments(args) {
    this.arguments = args ?? {};
    this.argsPre.textContent = prettyJson(args ?? {});
    const count = Object.keys(args ?? {}).length;
    this.args.querySelector("summary").textContent = count ? `Arguments (${count})` : "Arguments (none)";
  }

  waiting(text) {
    this._setState("awaiting", text);
  }

  /** Back to running after the user answered a tool's question. */
  resume() {
    if (this.state === "awaiting" && this.started !== null) {
      this._setState("running", "Running");
      this.tick(performance.now());
    }
  }

  start(event) {
    this.tool = event.tool;
    this.nameText.textContent = event.tool;
    this.server = event.server;
    this.serverText.textContent = `on ${event.server}`;
    this.node.setAttribute("aria-label", `Tool ${event.tool}`);
    this.setArguments(event.arguments);
    this.started = performance.now() - sinceServerTime(event.started_at); // a replayed start keeps its true age
    this._closePrompts(); // answered (here, or before a reload)
    this.noteApproval(event.approval);
    this._setState("running", "Running");
    this.tick(performance.now());
  }

  /** "Approved." on a call the user let run, live or stored. */
  noteApproval(approval) {
    if (approval && !this.interaction.querySelector(".approval-answer")) this.interaction.append(approvalNote(approval));
  }

  tick(now) {
    if (this.state !== "running" || this.started === null) return;
    this.statusText.textContent = `Running · ${formatDuration(now - this.started)}`;
  }

  reportProgress(event) {
    this.progress.hidden = false;
    if (typeof event.total === "number" && event.total > 0) {
      this.progressBar.max = event.total;
      this.progressBar.value = Math.min(event.progress, event.total);
      const pct = Math.round((100 * event.progress) / event.total);
      this.progressText.textContent = `${event.message ? `${event.message} · ` : ""}${pct}%`;
    } else {
      this.progressBar.removeAttribute("value"); // indeterminate
      this.progressText.textContent = event.message || `${event.progress}`;
    }
  }

  /** The "Open app" button of an app tool call (it reopens the app in the canvas). */
  offerApp() {
    if (this.appButton || !this.onOpenApp) return;
    this.appButton = el("button", { type: "button", class: "btn app-open", text: "Open app", title: `Open the ${this.tool} app in the canvas`,
      onclick: () => this.onOpenApp(this.callId, this.tool, this.server, this.arguments) });
    this.node.append(el("div", { class: "tool-app" }, this.appButton));
  }

  log(event) {
    this.logs.hidden = false;
    this.logs.append(el("li", { class: `log log-${event.level}` },
      el("span", { class: "log-level", text: event.level }), " ", el("span", { text: event.message })));
  }

  finish(event) {
    const took = formatDuration(event.duration_ms);
    this.nameText.textContent = event.tool || this.nameText.textContent;
    if (event.server) {
      this.server = event.server;
      this.serverText.textContent = `on ${event.server}`;
    }
    if (!this.argsPre.textContent) this.setArguments({});
    this.progress.hidden = event.ok || this.progress.hidden;
    this._closePrompts();
    this.noteApproval(event.approval);
    this._setState(event.ok ? "done" : "failed", `${event.ok ? "Done" : "Failed"}${took ? ` · ${took}` : ""}`);
    this.result.hidden = false;
    this.result.replaceChildren();
    const content = String(event.content ?? "");
    if (!event.ok) {
      this.result.append(el("p", { class: "tool-error", role: "alert", text: content || "The tool failed." }));
    } else {
      const summary = resultSummary(event.results, content);
      const details = el("details", { class: "tool-output" },
        el("summary", {}, el("span", { class: "label-text", text: "Result: " }), el("span", { class: "result-summary", text: summary || "(empty)" })),
        el("pre", { class: "result-text", text: content }));
      this.result.append(details);
    }
    if (event.app && this.onOpenApp) this.offerApp(event.app);
    const artifacts = event.artifacts || [];
    if (artifacts.length) {
      this.artifacts.hidden = false;
      this.artifacts.replaceChildren(...artifacts.map((a) => artifactChip(a, (x) => this.onOpenArtifact(x, artifacts))));
    }
  }
}

/** All cards of the page, by call id, with one timer for elapsed times. */
export class ToolCards {
  constructor(onOpenArtifact, onOpenApp) {
    this.onOpenArtifact = onOpenArtifact;
    this.onOpenApp = onOpenApp;
    this.cards = [];
    setInterval(() => {
      const now = performance.now();
      for (const card of this.cards) card.tick(now);
    }, 200);
  }

  /** The open card for a call, created (and placed with `place`) when there
   * is none.  Providers reuse call ids across rounds and turns ("call_0"), so
   * a finished card never takes new events; an event naming another tool
   * never lands in a card of a different tool, whatever its call id. */
  get(callId, info, place) {
    let card = this.find(callId, info.tool);
    if (!card) {
      card = new ToolCard({ callId, tool: info.tool, server: info.server, onOpenArtifact: this.onOpenArtifact, onOpenApp: this.onOpenApp });
      this.cards.push(card);
      place(card.node);
    }
    return card;
  }

  /** The newest open card for a call id (and tool, when given). */
  find(callId, tool) {
    for (let i = this.cards.length - 1; i >= 0; i--) {
      const card = this.cards[i];
      if (card.callId === callId && card.open && (!tool || card.tool === tool)) return card;
    }
    return undefined;
  }

  /** The newest card of a call id, finished or not (an `app` event follows its tool_result). */
  latest(callId) {
    for (let i = this.cards.length - 1; i >= 0; i--) if (this.cards[i].callId === callId) return this.cards[i];
    return undefined;
  }

  /** A turn ended: cards still running or waiting will not hear back. */
  abandon(reason) {
    for (const card of this.cards) {
      if (card.open) card.abandon(reason);
    }
  }

  clear() {
    this.cards = [];
  }
}
