// A small modal question in the page ("Open this link?"), answered yes or no.
// One at a time: a second question waits for the first to be answered.

import { el } from "./dom.js";

let queue = Promise.resolve();

/** Resolves true only when the user presses the confirm button; false at once if `signal` aborts
 * (the question is withdrawn, e.g. the app that asked cancelled its request). */
export function confirmDialog({ title, body, detail, yes, no = "Cancel", signal }) {
  const asked = queue.then(() => (signal?.aborted ? false : ask({ title, body, detail, yes, no, signal })));
  queue = asked.catch(() => false);
  return asked;
}

function ask({ title, body, detail, yes, no, signal }) {
  return new Promise((resolve) => {
    const yesButton = el("button", { type: "submit", class: "btn primary", value: "yes", text: yes });
    const noButton = el("button", { type: "submit", class: "btn", value: "no", text: no });
    const dialog = el("dialog", { class: "confirm-dialog", "aria-labelledby": "confirm-title" },
      el("form", { method: "dialog" },
        el("h2", { id: "confirm-title", text: title }),
        el("p", { text: body }),
        detail ? el("pre", { class: "confirm-detail", text: detail }) : null,
        el("div", { class: "actions" }, noButton, yesButton)));
    dialog.addEventListener("close", () => {
      dialog.remove();
      resolve(dialog.returnValue === "yes");
    });
    document.body.append(dialog);
    dialog.showModal();
    signal?.addEventListener("abort", () => dialog.close("no"), { once: true });
    noButton.focus();
  });
}
