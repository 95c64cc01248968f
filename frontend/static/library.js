// What servers offer besides tools: resources (attached to the next message
// as context), resource templates (fill in the blanks, then attach) and
// prompts (filled in by the server, then put in the message box).

import { el } from "./dom.js";
import { fetchJson, jsonBody } from "./errors.js";

let counter = 0;

function templateFields(template) {
  return [...String(template).matchAll(/\{([A-Za-z0-9_]+)\}/g)].map((m) => m[1]);
}

export class Library {
  constructor({ box, attachments, promptUrl, input, onChange, getLevel }) {
    Object.assign(this, { box, attachments, promptUrl, input, onChange, getLevel });
    this.attached = []; // {server, uri, node}
  }

  /** The resources to send with the next message; their chips go away. */
  take() {
    const refs = this.attached.map(({ server, uri }) => ({ server, uri }));
    this.clear();
    return refs;
  }

  clear() {
    for (const item of this.attached) item.node.remove();
    this.attached = [];
    this.onChange();
  }

  render(config) {
    const resources = config.resources || [];
    const templates = config.resource_templates || [];
    const prompts = config.prompts || [];
    // The config is polled while servers start: keep half-filled forms unless something changed.
    const key = JSON.stringify([resources, templates, prompts]);
    if (key === this.renderedKey) return;
    this.renderedKey = key;
    const sections = [];
    if (resources.length || templates.length) {
      sections.push(el("h3", { class: "library-heading", text: "Resources" }),
        el("ul", { class: "library-list" }, resources.map((r) => this._resourceItem(r)), templates.map((t) => this._templateItem(t))));
    }
    if (prompts.length) {
      sections.push(el("h3", { class: "library-heading", text: "Prompts" }),
        el("ul", { class: "library-list" }, prompts.map((p) => this._promptItem(p))));
    }
    this.box.replaceChildren(...sections);
    this.box.hidden = !sections.length;
  }

  attach(server, uri, label) {
    if (this.attached.some((a) => a.server === server && a.uri === uri)) return;
    const remove = el("button", { type: "button", class: "chip-remove", "aria-label": `Remove ${label}`, text: "×" });
    const node = el("li", { class: "chip chip-resource", title: `${uri} (from ${server})` },
      el("span", { class: "chip-type", "aria-hidden": "true", text: "RES" }), el("span", { class: "chip-name", text: label }), remove);
    const item = { server, uri, node };
    remove.addEventListener("click", () => {
      this.attached = this.attached.filter((other) => other !== item);
      node.remove();
      this.onChange();
    });
    this.attached.push(item);
    this.attachments.append(node);
    this.onChange();
  }

  _resourceItem(resource) {
    const label = resource.name || resource.uri;
    return el("li", { class: "library-item", title: resource.description || resource.uri },
      el("span", { class: "library-name", text: label }),
      el("span", { class: "muted small", text: ` ${resource.server}` }),
      el("button", { type: "button", class: "btn small-btn", "aria-label": `Attach ${label}`, text: "Attach",
        onclick: () => this.attach(resource.server, resource.uri, label) }));
  }

  _templateItem(template) {
    const id = `tpl-${++counter}`;
    const fields = templateFields(template.uri_template);
    const inputs = fields.map((name) => el("input", { id: `${id}-${name}`, name, required: true, "aria-label": name }));
    const form = el("form", { class: "library-form" },
      fields.map((name, i) => el("label", { class: "field" }, el("span", { text: name }), inputs[i])),
      el("button", { type: "submit", class: "btn small-btn", text: "Attach" }));
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      let uri = template.uri_template;
      fields.forEach((name, i) => { uri = uri.replace(`{${name}}`, encodeURIComponent(inputs[i].value)); });
      this.attach(template.server, uri, uri);
      form.reset();
    });
    return el("li", { class: "library-item", title: template.description || template.uri_template },
      el("details", {}, el("summary", {}, el("span", { class: "library-name", text: template.name || template.uri_template }),
        el("span", { class: "muted small", text: ` ${template.server}` })), form));
  }

  _promptItem(prompt) {
    const id = `prompt-${++counter}`;
    const args = prompt.arguments || [];
    const inputs = args.map((arg) => el("textarea", { id: `${id}-${arg.name}`, name: arg.name, rows: 1, required: !!arg.required }));
    const problem = el("p", { class: "field-error", role: "alert", hidden: true });
    const form = el("form", { class: "library-form" },
      args.map((arg, i) => el("div", { class: "field" },
        el("label", { for: inputs[i].id, text: `${arg.name}${arg.required ? " *" : ""}` }), inputs[i],
        arg.description ? el("small", { class: "field-help", text: arg.description }) : null)),
      problem,
      el("button", { type: "submit", class: "btn small-btn", text: "Use prompt" }));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const values = {};
      args.forEach((arg, i) => { if (inputs[i].value) values[arg.name] = inputs[i].value; });
      problem.hidden = true;
      try {
        const body = await fetchJson(this.promptUrl, jsonBody("POST",
          { server: prompt.server, name: prompt.name, arguments: values, compliance_level: this.getLevel() }));
        this.input.value = String(body?.text ?? "");
        this.input.dispatchEvent(new Event("input"));
        this.input.focus();
      } catch (exc) {
        problem.textContent = `Could not use the prompt: ${exc.message}`;
        problem.hidden = false;
      }
    });
    return el("li", { class: "library-item", title: prompt.description || "" },
      el("details", {}, el("summary", {}, el("span", { class: "library-name", text: prompt.name }),
        el("span", { class: "muted small", text: ` ${prompt.server}` })),
      prompt.description ? el("p", { class: "muted small", text: prompt.description }) : null, form));
  }
}
