// Background tasks (MCP Tasks): the open conversation's running tasks above the composer, each
// with its status, progress message and a Cancel button, kept current by `task` events; the
// questions a task asks (`elicitation_request` with a `task_` id); and a finished task's result
// drawn into the thread as a tool card.

import { el } from "./dom.js";
import { elicitationPrompt } from "./elicitation.js";
import { ToolCard } from "./toolcards.js";

const ACTIVE = new Set(["working", "input_required"]);
const STATUS_TEXT = { working: "Working", input_required: "Waiting for your answer" };

export class TaskList {
  /** `conversationId()`: the open conversation; `send(message)`: the socket; `onFinished(card)`: a result to show. */
  constructor({ root, conversationId, send, onFinished, onOpenArtifact, url = "/api/tasks" }) {
    Object.assign(this, { root, conversationId, send, onFinished, onOpenArtifact, url });
    this.tasks = new Map(); // active tasks by id, every conversation
    this.questions = new Map(); // open questions by call id
    this.shownFor = undefined;
    this.list = el("ul", { class: "task-items" });
    this.root.replaceChildren(el("h2", { class: "task-title small", text: "Background tasks" }), this.list);
  }

  /** Every active task of the user's (after connecting: some may have changed while away). */
  async load() {
    // A new connection: the server puts every open question to it again, and a question asked
    // before a restart of the host was asked again under a new id (the old one answers nothing).
    this.questions.clear();
    this.render(true);
    let body;
    try {
      const response = await fetch(this.url, { headers: { Accept: "application/json" } });
      if (!response.ok) return;
      body = await response.json();
    } catch {
      return;
    }
    this.tasks.clear();
    for (const task of body.tasks || []) {
      if (ACTIVE.has(task.status)) this.tasks.set(task.id, { ...task, task_id: task.id });
    }
    this.render(true);
  }

  /** A background task's question (an elicitation_request of a task's): asked on the task. True
   * when it was one. */
  question(event) {
    if (!String(event.request_id || "").startsWith("task_")) return false;
    this.questions.set(event.call_id, event);
    this.render(true);
    return true;
  }

  /** A `task` event: the task's state, or its result once it ended. */
  update(event) {
    if (ACTIVE.has(event.status)) {
      this.tasks.set(event.task_id, { ...this.tasks.get(event.task_id), ...event });
    } else {
      this.tasks.delete(event.task_id);
      this.questions.delete(event.call_id);
      if (event.conversation_id === this.conversationId()) this.onFinished(this._card(event));
    }
    this.render(true);
  }

  /** Show the open conversation's tasks (cheap when nothing changed). */
  render(force = false) {
    const current = this.conversationId();
    if (!force && current === this.shownFor) return;
    this.shownFor = current;
    const rows = [...this.tasks.values()]
      .filter((task) => task.conversation_id === current || this.questions.has(task.call_id))
      .map((task) => this._row(task));
    this.list.replaceChildren(...rows);
    this.root.hidden = rows.length === 0;
  }

  _row(task) {
    const status = el("span", { class: "task-status", text: STATUS_TEXT[task.status] || task.status });
    const message = el("span", { class: "task-message", text: task.message || "" });
    const cancel = el("button", { type: "button", class: "btn small task-cancel", text: "Cancel" });
    cancel.addEventListener("click", () => this._cancel(task, cancel));
    const elsewhere = task.conversation_id !== this.conversationId()
      ? el("span", { class: "muted small", text: " (another conversation)" }) : null;
    const row = el("li", { class: "task-item", dataset: { taskId: task.task_id, status: task.status } },
      el("div", { class: "task-head" }, el("span", { class: "tool-name", text: task.tool }), elsewhere, status, message, cancel));
    const question = this.questions.get(task.call_id);
    if (question) {
      row.append(elicitationPrompt(question, (answer) => {
        const ok = this.send(answer);
        if (ok) {
          this.questions.delete(task.call_id);
          this.render(true);
        }
        return ok;
      }));
    }
    return row;
  }

  async _cancel(task, button) {
    button.disabled = true;
    button.textContent = "Cancelling…";
    try {
      const response = await fetch(`${this.url}/${encodeURIComponent(task.task_id)}/cancel`, { method: "POST" });
      if (!response.ok) throw new Error(String(response.status));
    } catch {
      button.disabled = false;
      button.textContent = "Cancel";
    }
  }

  _card(event) {
    const card = new ToolCard({ callId: event.call_id, tool: event.tool, server: event.server, onOpenArtifact: this.onOpenArtifact });
    card.finish({ ...event, content: event.content ?? event.message ?? event.status });
    card.node.classList.add("task-result");
    return card;
  }
}
