// The inline approval prompt for a tool call that needs a person's yes.
// Edited arguments are checked here (JSON object) and again on the server.

import { el, prettyJson } from "./dom.js";

let counter = 0;

function parseArguments(text) {
  let value;
  try {
    value = JSON.parse(text);
  } catch (exc) {
    return { error: `The arguments are not valid JSON: ${exc.message}` };
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return { error: "The arguments must be a JSON object, like {\"name\": \"value\"}." };
  }
  return { value };
}

/** Build the prompt; `send(message)` returns false when it could not be sent. */
export function approvalPrompt(event, send) {
  const id = `approval-${++counter}`;
  const original = prettyJson(event.arguments ?? {});
  const editable = event.editable !== false;
  const problem = el("p", { class: "field-error", id: `${id}-error`, role: "alert", hidden: true });
  let editor;
  if (editable) {
    editor = el("textarea", { id: `${id}-args`, class: "json-editor", spellcheck: "false", "aria-describedby": `${id}-error`,
      rows: Math.min(14, Math.max(3, original.split("\n").length)) });
    editor.value = original;
  } else {
    editor = el("pre", { id: `${id}-args`, class: "json", text: original });
  }
  const approve = el("button", { type: "submit", class: "btn primary", value: "approve", text: "Approve" });
  const remember = el("button", { type: "submit", class: "btn", value: "remember", text: "Allow for this conversation" });
  const deny = el("button", { type: "submit", class: "btn danger", value: "deny", text: "Deny" });
  const form = el("form", { class: "approval", "aria-labelledby": `${id}-title` },
    el("p", { class: "approval-title", id: `${id}-title` }, el("strong", { text: "Approval needed" }), " to run ",
      el("code", { class: "approval-tool", text: event.tool || "an unnamed tool" }), " on ",
      el("strong", { class: "approval-server", text: event.server || "an unnamed server" })),
    el("p", { class: "approval-reason", text: event.reason ? `Why: ${event.reason}` : "" }),
    el("label", { for: `${id}-args`, class: "label-text", text: editable ? "Arguments (JSON, you may edit them)" : "Arguments" }),
    editor, problem,
    el("div", { class: "actions" }, approve, remember, deny));

  const fail = (message) => {
    problem.textContent = message;
    problem.hidden = false;
  };

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const choice = e.submitter?.value || "approve";
    const message = { type: "approval_response", call_id: event.call_id, approved: choice !== "deny" };
    if (choice !== "deny" && editable && editor.value.trim() !== original.trim()) {
      const parsed = parseArguments(editor.value);
      if (parsed.error) {
        fail(parsed.error);
        editor.focus();
        return;
      }
      if (JSON.stringify(parsed.value) !== JSON.stringify(event.arguments ?? {})) message.arguments = parsed.value;
    }
    if (choice === "remember") message.remember = true;
    if (!send(message)) {
      fail("Not connected: your answer was not sent. Wait for the connection to come back.");
      return;
    }
    form.replaceWith(approvalNote({ answer: choice, edited: Boolean(message.arguments) }));
  });
  return form;
}

const ANSWERS = { approve: "Approved.", remember: "Approved; this tool may run for the rest of the conversation.", deny: "Denied." };

/** What the user answered (`{answer: approve|remember|deny, edited}`), as the prompt leaves it. */
export function approvalNote({ answer, edited }) {
  const text = ANSWERS[answer] || ANSWERS.approve;
  return el("p", { class: `approval-answer answer-${answer}`, text: text + (edited ? " (with edited arguments)" : "") });
}
