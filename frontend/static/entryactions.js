// The actions under a message of the thread: copy, edit (user), regenerate (the last answer)
// and "‹ 1/2 ›" to switch versions. `actions` are the thread's (canAct, onEdit, onRegenerate,
// onBranch).

import { copyText, el } from "./dom.js";

const COPY_RESET_MS = 1500;

function copyButton(label, text) {
  const button = el("button", { type: "button", class: "msg-action copy-msg", "aria-label": label, title: label, text: "Copy" });
  button.addEventListener("click", async () => {
    const ok = await copyText(text());
    button.textContent = ok ? "Copied" : "Copy failed";
    setTimeout(() => { button.textContent = "Copy"; }, COPY_RESET_MS);
  });
  return button;
}

/** Copy and edit, under a user message. */
export function userActions(entry, actions) {
  const edit = el("button", { type: "button", class: "msg-action edit-btn", "aria-label": "Edit message", title: "Edit message", text: "Edit" });
  edit.addEventListener("click", () => startEdit(entry, actions));
  return el("div", { class: "msg-actions" }, copyButton("Copy message", () => entry.text), edit);
}

/** Copy and regenerate, under an answer. */
export function turnActions(entry, actions) {
  const regen = el("button", { type: "button", class: "msg-action regen-btn", "aria-label": "Regenerate answer",
    title: "Answer this message again (the current answer is kept as a version)", text: "Regenerate", hidden: true });
  regen.addEventListener("click", () => actions.canAct() && actions.onRegenerate(entry));
  return el("div", { class: "msg-actions" }, copyButton("Copy answer", () => entry.turn?.plainText() || ""), regen);
}

/** "‹ 2/3 ›" when the message has other versions. */
export function branchControl(node, message, actions) {
  node?.querySelector(".branch")?.remove();
  const siblings = message.siblings || [];
  if (!node || siblings.length < 2) return;
  const at = siblings.indexOf(message.id);
  const step = (delta, label, text) => {
    const target = siblings[at + delta] ?? "";
    const button = el("button", { type: "button", class: "msg-action", "aria-label": label, title: label, text, dataset: { target } });
    button.disabled = !target;
    button.addEventListener("click", () => target && actions.canAct() && actions.onBranch(target));
    return button;
  };
  node.prepend(el("span", { class: "branch", role: "group", "aria-label": "Versions" },
    step(-1, "Previous version", "‹"), el("span", { class: "branch-pos", text: `${at + 1}/${siblings.length}` }),
    step(1, "Next version", "›")));
}

function startEdit(entry, actions) {
  if (!actions.canAct() || !entry.userNode || entry.userNode.querySelector(".edit-form")) return;
  const bubble = entry.userNode.querySelector(".bubble");
  const box = el("textarea", { class: "edit-box", "aria-label": "Edit your message", rows: "3" });
  box.value = entry.text;
  const cancel = el("button", { type: "button", class: "btn", text: "Cancel" });
  const form = el("form", { class: "edit-form" }, box,
    el("div", { class: "actions" }, el("button", { type: "submit", class: "btn primary", text: "Send" }), cancel));
  const close = () => {
    form.remove();
    if (bubble) bubble.hidden = false;
    entry.userActions.hidden = false;
  };
  cancel.addEventListener("click", close);
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const text = box.value.trim();
    if (!text || !actions.canAct()) return;
    close();
    actions.onEdit(entry, text);
  });
  box.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      form.requestSubmit();
    } else if (e.key === "Escape") {
      e.stopPropagation();
      close();
    }
  });
  if (bubble) bubble.hidden = true; // a message of files only has no text bubble
  entry.userActions.hidden = true;
  entry.userNode.prepend(form);
  box.focus();
}
