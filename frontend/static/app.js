// The chat page: wires the socket, the open conversation, the sidebar, tool
// cards, canvas, tools panel and attachments together.  Each concern lives in
// its own module; this file holds the page's state and the composer.

import { AppViews, appTitle } from "./appviews.js";
import { Canvas } from "./canvas.js";
import { signInNotice } from "./connect.js";
import { ConversationsApi } from "./conversations.js";
import { randomId } from "./dom.js";
import { setupLayout } from "./layout.js";
import { Library } from "./library.js";
import { ChatView } from "./messages.js";
import { Opener } from "./opener.js";
import { Scroller } from "./scroll.js";
import { Sidebar } from "./sidebar.js";
import { Connection } from "./socket.js";
import { TaskList } from "./tasks.js";
import { Thread } from "./thread.js";
import { ToolCards, setServerTime } from "./toolcards.js";
import { ToolsPanel } from "./toolspanel.js";
import { drawTurnEvent } from "./turnevents.js";
import { Uploads } from "./uploads.js";

const page = JSON.parse(document.getElementById("page-data").textContent);
signInNotice();
const $ = (id) => document.getElementById(id);
const input = $("input");
const sendButton = $("send");
const stopButton = $("stop");
const hint = $("composer-hint");

/** conversationId: the open conversation; stored: it exists on the server; level: its compliance level as
 * the server knows it; entry/turn: the answer being drawn; staleTurn: events of a cancelled turn to drop. */
const state = { conversationId: null, stored: false, level: null, incognito: false, loading: false, entry: null, turn: null,
  lateDone: null, sendWhenReady: false, running: false, hadSession: false, staleTurn: false, turnFrom: null,
  incognitoState: null, unacked: null }; // unacked: the chat sent last, until its turn answers; incognitoState: the sealed history of the open incognito chat (the server keeps none)

const api = new ConversationsApi(page.conversations_url || "/api/conversations");
const view = new ChatView($("messages"), new Scroller($("messages"), $("jump-newest")), $("empty-state"));
const layout = setupLayout({ toggle: $("tools-toggle"), close: $("tools-close"), scrim: $("scrim") });
const canvas = new Canvas({
  panel: $("canvas"), tabs: $("canvas-tabs"), body: $("canvas-body"), download: $("canvas-download"),
  close: $("canvas-close"), resizer: $("canvas-resizer"), toggle: $("canvas-toggle"),
  onVisibility: (open) => {
    layout.canvasVisible(open);
    sidebar.canvasVisible(open);
  },
});
const apps = new AppViews({ canvas, appsUrl: page.apps_url || "/api/apps", sandboxOrigin: page.sandbox_origin, version: page.version,
  sendMessage: (text) => sendFromApp(text) });
const openApp = (callId, tool, server, args) => apps.open(callId, appTitle(tool, server, args));
const cards = new ToolCards((artifact) => canvas.open(artifact), openApp);
const library = new Library({
  box: $("library"), attachments: $("attachments"), promptUrl: page.prompt_url || "/api/prompts", input,
  onChange: () => updateControls(), getLevel: () => tools.complianceLevel ?? null,
});
const tools = new ToolsPanel({
  configUrl: page.config_url, servers: $("servers"), status: $("servers-status"), summary: $("tools-summary"), compliance: $("compliance"),
  complianceNote: $("compliance-note"), model: $("model"), modelNote: $("model-note"),
  filter: $("tools-filter"), filterNote: $("tools-filter-note"),
  onConfig: (config) => {
    library.render(config);
    opener.configLoaded();
  },
});
const uploads = new Uploads({
  url: page.upload_url, maxBytes: page.max_upload_bytes, button: $("attach"), input: $("file-input"),
  list: $("attachments"), dropZone: document.body, overlay: $("drop-overlay"), onChange: () => updateControls(),
  onUploaded: (file) => {
    tools.include(file.suggested_tools);
    flushQueue();
  },
});
const connection = new Connection(page.ws_path, { onEvent, onState: showConnection });
const send = (message) => connection.send(message);
const thread = new Thread(view, {
  canAct: () => connection.open && !state.running && !state.loading,
  onEdit: sendEdit,
  onRegenerate: sendRegenerate,
  onBranch: (messageId) => opener.switchBranch(messageId),
  onEarlier: () => opener.showEarlier(),
  onOpenArtifact: (artifact) => canvas.open(artifact),
  onOpenApp: openApp,
  onStoredApp: (callId, tool, how) => apps.stored(callId, tool, how),
});
const tasks = new TaskList({
  root: $("tasks"), conversationId: () => state.conversationId, send, onOpenArtifact: (artifact) => canvas.open(artifact),
  onFinished: (card) => thread.last?.turn?.addBlock(card.node), // a finished task's result, after the last answer
});
const sidebar = new Sidebar({
  api, root: $("sidebar"), list: $("conv-groups"), search: $("conv-search"), more: $("conv-more"), status: $("conv-status"),
  newChat: $("sidebar-new-chat"), topNewChat: $("new-chat"), incognito: $("incognito"), toggle: $("sidebar-toggle"),
  close: $("sidebar-close"), scrim: $("sidebar-scrim"),
  onOpen: (id) => (id !== state.conversationId || !state.stored) && opener.open(id, { push: true }),
  onNew: () => opener.newChat({ push: true }),
  onDeleted: (id) => id === state.conversationId && opener.newChat({ push: true }),
  onRenamed: (id, title) => id === state.conversationId && opener.showTitle(title),
  onIncognito: (on) => opener.setIncognito(on),
});
const opener = new Opener({ state, api, thread, view, sidebar, cards, canvas, uploads, library, connection,
  selects: { level: $("compliance"), model: $("model") }, banner: $("incognito-banner"), input,
  beginTurn, endTurn, updateControls, sendQueued: sendChat, requeue, onNewChat: () => tools.resetModel() });

// -- connection state --------------------------------------------------------
function showConnection(status, { retryIn, attempt }) {
  const conn = $("conn");
  conn.dataset.state = status;
  const tries = attempt > 1 ? ` (attempt ${attempt})` : "";
  const text = {
    connecting: "Connecting…",
    connected: "Connected",
    reconnecting: retryIn ? `Reconnecting in ${retryIn} s${tries}` : `Reconnecting…${tries}`,
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
const canSend = () => connection.open && !state.running && !state.loading && !uploads.uploading && hasMessage();

function updateControls() {
  tasks.render(); // the open conversation's tasks (it may have changed)
  const connected = connection.open;
  sendButton.hidden = state.running;
  stopButton.hidden = !state.running;
  sendButton.disabled = !canSend();
  const queued = state.sendWhenReady && hasMessage();
  $("composer").dataset.queued = String(queued);
  if (queued) hint.textContent = !connected ? "Queued: your message is sent once the connection is back."
    : state.running ? "Queued: your message is sent when this answer is finished."
      : "Queued: your message is sent in a moment.";
  // A socket the server refused comes with its reason (too many tabs open), shown as text.
  else if (!connected) hint.textContent = connection.refusal ? `Not connected: the server says ${connection.refusal}.`
    : "Not connected: you can send again once the connection is back.";
  else if (uploads.uploading) hint.textContent = "Uploading files…";
  else if (state.loading) hint.textContent = "Loading the conversation…";
  else if (state.incognito) hint.textContent = "Incognito: nothing of this chat is saved · Enter to send";
  else hint.textContent = "Enter to send · Shift+Enter for a new line";
  hint.classList.toggle("warn", !connected);
  thread.refreshActions();
}

function autosize() {
  input.style.height = "auto";
  input.style.height = `${Math.min(input.scrollHeight, 220)}px`;
}

/** A `chat` for the open conversation with the model, tools and level chosen. */
function chatMessage(content, extra = {}) {
  state.conversationId ??= randomId();
  const message = { type: "chat", content, conversation_id: state.conversationId, ...extra };
  if (tools.model) message.model = tools.model;
  const level = tools.complianceLevel ?? null;
  if (level !== state.level) message.compliance_level = level; // absent = keep the conversation's level
  if (tools.selectedTools) message.tools = tools.selectedTools;
  if (state.incognito) {
    message.incognito = true;
    // The server keeps nothing of it: the page holds its sealed history and sends it back,
    // so the chat goes on whichever app process answers.
    if (state.incognitoState?.conversation_id === state.conversationId) message.incognito_state = state.incognitoState.state;
  }
  return message;
}

/** Send the composer's message, or queue it (shown as queued) when the page cannot send yet:
 * an answer still finishing, a conversation loading, files uploading, the line down. */
function sendChat() {
  const content = input.value.trim();
  if (!hasMessage()) {
    setQueued(false);
    return;
  }
  if (!canSend()) {
    setQueued(true);
    return;
  }
  setQueued(false);
  const files = uploads.ready;
  const message = chatMessage(content);
  if (files.length) message.files = files.map((f) => f.id);
  const resources = library.attached.map(({ server, uri }) => ({ server, uri }));
  if (resources.length) message.resources = resources;
  if (!sent(message)) return;
  // Until the server shows it took the message (any event of its turn), a dropped line may have
  // lost it: after reconnecting, the page looks in the store and sends it again if it is not there.
  state.unacked = state.incognito || files.length || resources.length ? null : { text: content, conversationId: state.conversationId };
  uploads.take();
  library.take();
  const entry = thread.addUser(content, [...files, ...resources.map((r) => ({ name: r.uri, mime: `resource from ${r.server}` }))]);
  beginTurn(entry);
  input.value = "";
  autosize();
}

/** An app's `ui/message`, after the user agreed: sent as the user's next message. */
function sendFromApp(text) {
  if (!connection.open || state.running || state.loading || !sent(chatMessage(text))) return false;
  beginTurn(thread.addUser(text));
  return true;
}

/** The message the line dropped before any process took it: back in the composer, sent once connected. */
function requeue(text) {
  if (state.entry && thread.entries.includes(state.entry)) thread.truncateFrom(state.entry);
  Object.assign(state, { unacked: null, entry: null, turn: null, running: false });
  input.value = text;
  autosize();
  view.notice("Your last message did not reach the server before the connection dropped: it is sent again.");
  setQueued(true);
}

function setQueued(on) {
  state.sendWhenReady = on;
  updateControls();
}

/** The queued message goes out once nothing holds it back. */
function flushQueue() {
  if (!state.sendWhenReady) return;
  if (!hasMessage()) setQueued(false);
  else if (canSend()) sendChat();
}

function sendEdit(entry, text) {
  if (!entry.userId || !sent(chatMessage(text, { edit_of: entry.userId }))) return;
  thread.truncateFrom(entry);
  beginTurn(thread.addUser(text));
}

function sendRegenerate(entry) {
  if (!sent(chatMessage("", { regenerate: true }))) return;
  thread.dropAnswer(entry);
  beginTurn(entry);
}

/** Send a chat; the conversation's level is what was asked for from now on. */
function sent(message) {
  if (!send(message)) return false;
  state.turnFrom = state.conversationId;
  if ("compliance_level" in message) state.level = message.compliance_level;
  return true;
}

function beginTurn(entry) {
  state.lateDone = null;
  state.entry = entry;
  state.turn = thread.startTurn(entry);
  state.running = true;
  updateControls();
}

function endTurn() {
  const hadFocus = document.activeElement === stopButton;
  state.running = false;
  updateControls();
  if (hadFocus) input.focus();
}

// -- server events: each kind the server sends (chat/events.py) has its handler here and only here
// (tests/browser/test_event_table.py fails when the server gains a kind this table lacks).
export const HANDLERS = {
  session: onSession,
  catalogue_changed: () => tools.load(), // a server's tools, resources or prompts changed (list_changed, restart, reload)
  attached: (event) => {
    setServerTime(event.server_time);
    opener.attached(event);
  },
  conversation: (event) => {
    state.unacked = null;
    if (!state.staleTurn) opener.announced(event);
  },
  incognito_state: onIncognitoState,
  task: (event) => tasks.update(event), // a background task's state and result
  error: onError,
  // a turn's events (a call an app makes is shown on the app: `from_app`)
  token: onTurnEvent, notice: onTurnEvent, render: onTurnEvent, app: onTurnEvent, message_done: onTurnEvent,
  tool_start: onTurnEvent, tool_progress: onTurnEvent, tool_log: onTurnEvent, tool_result: onTurnEvent, approval_request: onTurnEvent,
  elicitation_request: (event) => tasks.question(event) || onTurnEvent(event), // a task's question is asked on the task
};

function onEvent(event) {
  const handler = Object.hasOwn(HANDLERS, event.type) ? HANDLERS[event.type] : null;
  if (handler) handler(event);
  else console.warn("[switchboard] an event of an unknown kind:", event.type);
}

function onSession(event) {
  if (event.refreshed) {
    tools.load(); // the same connection, the user's groups changed (an administrator reloaded the config)
    return;
  }
  const reconnected = state.hadSession;
  if (reconnected) tools.load(); // models and servers may have changed while the line was down
  state.hadSession = true;
  state.staleTurn = false; // a new connection: nothing of an old turn can arrive
  state.conversationId ??= event.conversation_id;
  opener.connected(reconnected);
  tasks.load();
}

function onIncognitoState(event) {
  if (state.incognito && !state.staleTurn) {
    // The server names the chat (a name the page picked becomes the user's own id): go on under its name.
    state.incognitoState = { conversation_id: event.conversation_id, state: event.state };
    state.conversationId = event.conversation_id;
  }
}

function onTurnEvent(event) {
  state.unacked = null;
  if (event.from_app) {
    // A call an app makes: shown on the app, not in the answer; its approval is asked on the app.
    if (event.type === "approval_request") {
      if (!apps.approval(event, send)) view.notice(`An app of ${event.server} waits for your approval to run ${event.tool}: open the app to answer.`);
    } else {
      apps.callEvent(event);
    }
    return;
  }
  if (state.staleTurn) {
    // Events of the turn "New chat" cancelled, up to its message_done.
    if (event.type === "message_done") state.staleTurn = false;
    return;
  }
  if (!state.turn || !state.running) {
    // A turn that failed before any output was ended at its `error`; its message_done still
    // carries the ids the entry needs (edit, versions).
    if (event.type === "message_done" && state.lateDone) {
      thread.answered(state.lateDone, event);
      opener.turnDone(event);
      state.lateDone = null;
      flushQueue();
    }
    return;
  }
  drawTurnEvent(state.turn, event, { view, cards, canvas, apps, send, onDone });
}

function onError(event) {
  state.unacked = null;
  tools.load(); // the failed model is marked in the picker (`failing`), and the default may have moved
  const turn = state.turn;
  if (turn && state.running) {
    turn.error(event);
    // Errors before any output (unknown model, bad level) end the turn without a message_done.
    if (!turn.texts.length && !turn.blocks.querySelector(".tool-card")) {
      turn.finish("error");
      endTurn();
      state.lateDone = state.entry;
    }
  } else {
    view.error(event);
  }
}

function onDone(event) {
  thread.answered(state.entry, event);
  endTurn();
  opener.turnDone(event);
  flushQueue();
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
document.addEventListener("keydown", (e) => {
  if (e.key === "Escape" && state.running && document.activeElement === input) send({ type: "cancel" });
});

updateControls();
tools.load();
opener.start();
connection.connect();
input.focus();
