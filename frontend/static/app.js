// Minimal chat page: streams answers and shows tool cards.  All untrusted
// text goes in with textContent; only server-sanitized HTML uses innerHTML.
const page = JSON.parse(document.getElementById("page-data").textContent);
const messages = document.getElementById("messages");
const input = document.getElementById("input");
const modelSelect = document.getElementById("model");
const conn = document.getElementById("conn");
const stop = document.getElementById("stop");
let socket = null;
let answer = null;
const cards = new Map();

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

function currentAnswer() {
  if (!answer) { answer = el("div", "msg assistant"); messages.append(answer); answer.dataset.raw = ""; }
  return answer;
}

async function loadConfig() {
  const res = await fetch(page.config_url);
  const cfg = await res.json();
  modelSelect.replaceChildren();
  for (const m of cfg.models) {
    const opt = el("option", "", m.name + (m.demo ? " (demo)" : "") + (m.available ? "" : " – unavailable"));
    opt.value = m.name; opt.disabled = !m.available;
    if (m.name === cfg.default_model) opt.selected = true;
    modelSelect.append(opt);
  }
}

function onEvent(ev) {
  switch (ev.type) {
    case "session": conn.textContent = `connected as ${ev.user}`; break;
    case "token": { const a = currentAnswer(); a.dataset.raw += ev.text; a.textContent = a.dataset.raw; break; }
    case "render": currentAnswer().innerHTML = ev.html; break;
    case "tool_start": {
      const card = el("div", "tool running", `⚙ ${ev.tool} — running`);
      cards.set(ev.call_id, card); messages.append(card); answer = null; break;
    }
    case "tool_result": {
      const card = cards.get(ev.call_id) || el("div", "tool");
      card.className = ev.ok ? "tool done" : "tool failed";
      card.textContent = `${ev.ok ? "✓" : "✗"} ${ev.tool} (${ev.duration_ms} ms): ${ev.content.slice(0, 300)}`;
      for (const a of ev.artifacts || []) {
        const link = el("a", "chip", a.name); link.href = a.url; link.target = "_blank"; link.rel = "noopener";
        card.append(" ", link);
      }
      if (!card.isConnected) messages.append(card);
      break;
    }
    case "message_done": currentAnswer().innerHTML = ev.html; answer = null; stop.hidden = true; break;
    case "error": messages.append(el("div", "msg error", `${ev.message}${ev.action ? " — " + ev.action : ""}`)); break;
  }
}

function connect() {
  const proto = location.protocol === "https:" ? "wss" : "ws";
  socket = new WebSocket(`${proto}://${location.host}${page.ws_path}`);
  socket.onmessage = (m) => onEvent(JSON.parse(m.data));
  socket.onclose = () => { conn.textContent = "disconnected — retrying"; setTimeout(connect, 2000); };
}

document.getElementById("composer").addEventListener("submit", (e) => {
  e.preventDefault();
  const text = input.value.trim();
  if (!text || !socket || socket.readyState !== WebSocket.OPEN) return;
  messages.append(el("div", "msg user", text));
  socket.send(JSON.stringify({ type: "chat", content: text, model: modelSelect.value || undefined }));
  input.value = ""; answer = null; stop.hidden = false;
});
input.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); document.getElementById("composer").requestSubmit(); }
});
stop.addEventListener("click", () => socket && socket.send(JSON.stringify({ type: "cancel" })));

loadConfig();
connect();
