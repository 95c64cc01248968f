// Attachments: a button and drag & drop; each file is uploaded at once
// (POST /api/files) and shown as a removable chip until the next message.

import { el, formatBytes } from "./dom.js";
import { fetchJson } from "./errors.js";

export class Uploads {
  constructor({ url, maxBytes, button, input, list, dropZone, overlay, onChange, onUploaded }) {
    Object.assign(this, { url, maxBytes, input, list, overlay, onChange, onUploaded });
    this.items = [];
    button.addEventListener("click", () => input.click());
    input.addEventListener("change", () => {
      this.addFiles(input.files);
      input.value = "";
    });
    let depth = 0;
    const hasFiles = (e) => [...(e.dataTransfer?.types || [])].includes("Files");
    dropZone.addEventListener("dragenter", (e) => {
      if (!hasFiles(e)) return;
      depth += 1;
      overlay.hidden = false;
    });
    dropZone.addEventListener("dragleave", () => {
      depth = Math.max(0, depth - 1);
      if (!depth) overlay.hidden = true;
    });
    dropZone.addEventListener("dragover", (e) => {
      if (hasFiles(e)) e.preventDefault();
    });
    dropZone.addEventListener("drop", (e) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      depth = 0;
      overlay.hidden = true;
      this.addFiles(e.dataTransfer.files);
    });
  }

  get uploading() {
    return this.items.some((item) => item.state === "uploading");
  }

  get ready() {
    return this.items.filter((item) => item.state === "ready").map((item) => item.file);
  }

  addFiles(files) {
    for (const file of files) this._add(file);
  }

  /** The uploaded files for the message being sent; the chips go away. */
  take() {
    const files = this.ready;
    this.clear();
    return files;
  }

  clear() {
    for (const item of this.items) {
      item.abort?.abort();
      item.node.remove();
    }
    this.items = [];
    this.onChange();
  }

  _add(file) {
    const meta = el("span", { class: "chip-meta" });
    const remove = el("button", { type: "button", class: "chip-remove", "aria-label": `Remove ${file.name}`, text: "×" });
    const node = el("li", { class: "chip chip-upload" }, el("span", { class: "chip-name", text: file.name }), meta, remove);
    const item = { node, meta, state: "uploading", file: null, abort: new AbortController() };
    remove.addEventListener("click", () => {
      item.abort.abort();
      this.items = this.items.filter((other) => other !== item);
      node.remove();
      this.onChange();
    });
    this.items.push(item);
    this.list.append(node);
    if (this.maxBytes && file.size > this.maxBytes) {
      this._failed(item, `larger than the ${formatBytes(this.maxBytes)} limit`);
      return;
    }
    this._set(item, "uploading", `${formatBytes(file.size)} · uploading…`);
    this._upload(file, item);
  }

  async _upload(file, item) {
    const body = new FormData();
    body.append("file", file, file.name);
    try {
      const data = await fetchJson(this.url, { method: "POST", body, signal: item.abort.signal });
      item.file = { id: data.id, name: data.name, mime: data.mime, size: data.size };
      this._set(item, "ready", formatBytes(data.size));
      this.onUploaded?.(data);
    } catch (exc) {
      if (exc.name === "AbortError") return;
      this._failed(item, exc.message);
    }
  }

  _failed(item, why) {
    this._set(item, "failed", `failed: ${why}`);
    item.node.setAttribute("role", "alert");
  }

  _set(item, state, text) {
    item.state = state;
    item.node.dataset.state = state;
    item.meta.textContent = text;
    this.onChange();
  }
}
