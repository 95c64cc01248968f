// The chat page: wires the socket, the conversation, tool cards, canvas,
// tools panel and attachments together.  Each concern lives in its own module.

import { approvalPrompt } from "./approval.js";
import { Canvas } from "./canvas.js";
import { randomId } from "./dom.js";
import { elicitationPrompt } from "./elicitation.js";
import { setupLayout } from "./layout.js";
import { Library } from "./library.js";
import { ChatView } from "./messages.js";
import { Scroller } from "./scroll.js";
import { Connection } from "./socket.js";
import { ToolCards } from "./toolcards.js";
import { ToolsPanel } from "./toolspanel.js";
import { Uploads } from "./uploads.js";

const page = JSON.parse(document.getElementById("page-data").textContent);
const $ = (id) => document.getElementById(id);
const input = $("input");
const sendButton = $("send");
const stopButton = $("stop");
const hint = $("composer-hint");

const state = { conversationId: null, turn: null, running: false, hadSession: false, staleTurn: false };

const view = new ChatView($("messages"), new Scroller($("messages"), $("jump-newest")), $("empty-state"));
const layout = setupLayout({ toggle: $("tools-toggle"), close: $("tools-close"), scrim: $("scrim") });
const canvas = new Canvas({
  panel: $("canvas"), tabs: $("canvas-tabs"), body: $("canvas-body"), download: $("canvas-download"),
  close: $("canvas-close"), resizer: $("canvas-resizer"), toggle: $("canvas-toggle"),
  onVisibility: (open) => layout.canvasVisible(open),
});
const cards = new ToolCards((artifact) => canvas.open(artifact));
const library = new Library({
  box: $("library"), attachments: $("attachments"), promptUrl: page.prompt_url || "/api/prompts", input,
  onChange: () => updateControls(), getLevel: () => tools.complianceLevel ?? null,
});
const tools = new ToolsPanel({
  configUrl: page.config_url, servers: $("servers"), status: $("servers-status"), summary: $("tools-summary"), compliance: $("compliance"),
  complianceNote: $("compliance-note"), model: $("model"), modelNote: $("model-note"),
  onConfig: (config) => library.render(config),
});
const uploads = new Uploads({
  url: page.upload_url, maxBytes: page.max_upload_bytes, button: $("attach"), input: $("file-input"),
  list: $("attachments"), dropZone: document.body, overlay: $("drop-overlay"), onChange: () => updateControls(),
  onUploaded: (file) => tools.include(file.suggested_tools),
});
const connection = new Connection(page.ws_path, { onEvent, onState: showConnection });
const send = (message) => connection.send(message);

// -- connection state --------------------------------------------------------
function showConnection(status, { retryIn }) {
  const conn = $("conn");
  conn.dataset.state = status;
  const text = {
    connecting: "Connecting…",
    connected: "Connected",
    reconnecting: retryIn ? `Reconnecting in ${retryIn} s` : "Reconnecting…",
  }[status];
  $("conn-text").textContent = text;
  $("conn-retry").hidden = !(status === "reconnecting" && retryIn > 0);
  if (status !== "connected" && state.running) {
    state.turn?.finish("error", "The connection was lost, so this answer is incomplete.");
    cards.abandon("Connection lost");
    endTurn();
  }
  updateControls();
}
$("conn-retry").addEventListener("click", () => connection.retryNow());

// -- controls ---------------------------------------------------------------
/** Something to send: text, or an attached file or resource. */
const hasMessage = () => Boolean(input.value.trim() || uploads.ready.length || library.attached.length);
const canSend = () => connection.open && !state.running && !uploads.uploading && hasMessage();

function updateControls() {
  const connected = connection.open;
  sendButton.hidden = state.running;
  stopButton.hidden = !state.running;
  sendButton.disabled = !canSend();
  if (!connected) hint.textContent = "Not connected: you can send again once the connection is back.";
  else if (uploads.uploading) hint.textContent = "Uploading files…";
  else hint.textContent = "Enter to send · Shift+Enter for a new line";
  hint.classList.toggle("warn", !connected);
}

function autosize() {
  input.style.height = "auto";
  input.style.height = `${Math.min(input.scrollHeight, 220)}px`;
}

function sendChat() {
  const content = input.value.trim();
  if (!canSend()) return;
  const files = uploads.ready;
  const message = { type: "chat", content, conversation_id: state.conversationId ?? undefined };
  if (tools.model) message.model = tools.model;
  if (tools.complianceLevel) message.compliance_level = tools.complianceLevel;
  if (tools.selectedTools) message.tools = tools.selectedTools;
  if (files.length) message.files = files.map((f) => f.id);
  const resources = library.attached.map(({ server, uri }) => ({ server, uri }));
  if (resources.length) message.resources = resources;
  if (!send(message)) return;
  uploads.take();
  library.take();
  view.addUser(content, [...files, ...resources.map((r) => ({ name: r.uri, mime: `resource from ${r.server}` }))]);
  state.turn = view.startTurn();
  state.running = true;
  input.value = "";
  autosize();
  updateControls();
}

function endTurn() {
  const hadFocus = document.activeElement === stopButton;
  state.running = false;
  updateControls();
  if (hadFocus) input.focus();
}

function newChat() {
  if (state.running && send({ type: "cancel" })) state.staleTurn = true;
  state.conversationId = randomId();
  state.turn = null;
  state.running = false;
  view.clear();
  cards.clear();
  canvas.clear();
  uploads.clear();
  library.clear();
  updateControls();
  input.focus();
}

// -- server events -----------------------------------------------------------
const TURN_EVENTS = new Set(["notice", "token", "render", "tool_start", "tool_progress", "tool_log", "approval_request",
  "elicitation_request", "tool_result", "message_done"]);

function onEvent(event) {
  if (event.type === "session") {
    if (state.hadSession && !view.isEmpty) {
      view.notice("Reconnected. The assistant starts afresh here: it does not remember the messages above.");
    }
    if (state.hadSession) tools.load(); // models and servers may have changed while the line was down
    state.hadSession = true;
    state.staleTurn = false; // a new connection: nothing of an old turn can arrive
    state.conversationId ??= event.conversation_id;
    return;
  }
  if (TURN_EVENTS.has(event.type)) {
    if (state.staleTurn) {
      // Events of the turn "New chat" cancelled, up to its message_done.
      if (event.type === "message_done") state.staleTurn = false;
      return;
    }
    if (!state.turn || !state.running) return;
    onTurnEvent(state.turn, event);
    return;
  }
  if (event.type === "error") {
    const turn = state.turn;
    if (turn && state.running) {
      turn.error(event);
      // Errors before any output (unknown model, bad level) end the turn
      // without a message_done.
      if (!turn.texts.length && !turn.blocks.querySelector(".tool-card")) {
        turn.finish("error");
        endTurn();
      }
    } else {
      view.error(event);
    }
  }
}

function onTurnEvent(turn, event) {
  const place = (node) => turn.addBlock(node);
  switch (event.type) {
    case "token":
      turn.token(event.text);
      break;
    case "notice":
      turn.notice(event);
      break;
    case "render":
      turn.render(event);
      break;
    case "tool_start":
      cards.get(event.call_id, event, place).start(event);
      break;
    case "tool_progress":
      cards.find(event.call_id)?.reportProgress(event);
      break;
    case "tool_log":
      cards.find(event.call_id)?.log(event);
      break;
    case "approval_request": {
      const card = cards.get(event.call_id, event, place);
      card.setArguments(event.arguments);
      card.waiting("Waiting for your approval");
      card.interaction.replaceChildren(approvalPrompt(event, send));
      view.changed();
      break;
    }
    case "elicitation_request": {
      const card = event.call_id ? cards.find(event.call_id) : undefined;
      const answered = (message) => {
        const ok = send(message);
        if (ok) card?.resume();
        return ok;
      };
      const form = elicitationPrompt(event, answered);
      if (card) {
        card.waiting("Waiting for your answer");
        card.interaction.replaceChildren(form);
        view.changed();
      } else {
        place(form);
      }
      break;
    }
    case "tool_result": {
      cards.get(event.call_id, event, place).finish(event);
      canvas.showResult(event.artifacts, event.display);
      view.changed();
      break;
    }
    case "message_done":
      turn.done(event);
      cards.abandon(event.finish_reason === "cancelled" ? "Cancelled" : "Did not finish");
      endTurn();
      break;
    default:
      break;
  }
}

// -- wiring ------------------------------------------------------------------
$("composer").addEventListener("submit", (e) => {
  e.preventDefault();
  sendChat();
});
input.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    sendChat();
  }
});
input.addEventListener("input", () => {
  autosize();
  updateControls();
});
stopButton.addEventListener("click", () => {
  send({ type: "cancel" });
  stopButton.disabled = true;
  setTimeout(() => { stopButton.disabled = false; }, 1500);
});
$("new-chat").addEventListener("click", newChat);
document.addEventListener("keydown", (e) => {
  if (e.key === "Escape" && state.running && document.activeElement === input) send({ type: "cancel" });
});

updateControls();
tools.load();
connection.connect();
input.focus();
