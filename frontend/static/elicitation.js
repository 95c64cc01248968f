// A server's question to the user (MCP elicitation): a form built from the
// request's JSON schema, or a link to open when the schema carries `x-url`.

import { el, safeHttpUrl } from "./dom.js";

let counter = 0;

const INPUT_TYPES = { email: "email", uri: "url", url: "url", date: "date", "date-time": "datetime-local" };

function enumChoices(schema) {
  if (Array.isArray(schema.oneOf) || Array.isArray(schema.anyOf)) {
    return (schema.oneOf || schema.anyOf).filter((o) => "const" in o).map((o) => ({ value: o.const, label: o.title ?? String(o.const) }));
  }
  if (Array.isArray(schema.enum)) {
    return schema.enum.map((value, i) => ({ value, label: schema.enumNames?.[i] ?? String(value) }));
  }
  return null;
}

function labelFor(name, schema, required) {
  return `${schema.title || name}${required ? " *" : ""}`;
}

/** One field: returns {node, read()} where read() gives [present, value]. */
function buildField(name, schema, required, idBase) {
  const id = `${idBase}-${name.replace(/[^A-Za-z0-9_-]/g, "_")}`;
  const help = schema.description ? el("small", { class: "field-help", id: `${id}-help`, text: schema.description }) : null;
  const describedBy = help ? `${id}-help` : undefined;
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
  const choices = enumChoices(schema);

  if (type === "array") {
    const options = enumChoices(schema.items || {}) || [];
    const boxes = options.map((choice, i) => {
      const box = el("input", { type: "checkbox", id: `${id}-${i}`, name, checked: (schema.default || []).includes(choice.value) });
      return { box, choice, node: el("label", { class: "check", for: `${id}-${i}` }, box, " ", choice.label) };
    });
    const min = schema.minItems ?? (required ? 1 : 0);
    const validate = () => {
      const count = boxes.filter((b) => b.box.checked).length;
      const tooMany = schema.maxItems !== undefined && count > schema.maxItems;
      boxes[0]?.box.setCustomValidity(count < min ? `Choose at least ${min}.` : tooMany ? `Choose at most ${schema.maxItems}.` : "");
    };
    boxes.forEach((b) => b.box.addEventListener("change", validate));
    validate();
    const node = el("fieldset", { class: "field", "aria-describedby": describedBy },
      el("legend", { text: labelFor(name, schema, required) }), ...boxes.map((b) => b.node), help);
    return { node, read: () => [true, boxes.filter((b) => b.box.checked).map((b) => b.choice.value)] };
  }

  if (type === "boolean") {
    const box = el("input", { type: "checkbox", id, name, checked: schema.default === true, "aria-describedby": describedBy });
    const node = el("div", { class: "field field-check" }, el("label", { class: "check", for: id }, box, " ", schema.title || name), help);
    return { node, read: () => [true, box.checked] };
  }

  let input;
  if (choices) {
    input = el("select", { id, name, required, "aria-describedby": describedBy },
      el("option", { value: "", text: required ? "Choose…" : "(none)" }),
      choices.map((c, i) => el("option", { value: String(i), text: c.label, selected: schema.default === c.value })));
  } else if (type === "number" || type === "integer") {
    input = el("input", { type: "number", id, name, required, step: type === "integer" ? "1" : "any",
      min: schema.minimum, max: schema.maximum, value: schema.default, "aria-describedby": describedBy });
  } else {
    input = el("input", { type: INPUT_TYPES[schema.format] || "text", id, name, required,
      minlength: schema.minLength, maxlength: schema.maxLength, pattern: schema.pattern, value: schema.default,
      "aria-describedby": describedBy });
  }
  const read = () => {
    const raw = input.value;
    if (raw === "") return [false, undefined];
    if (choices) return [true, choices[Number(raw)].value];
    if (type === "integer") return [true, Number.parseInt(raw, 10)];
    if (type === "number") return [true, Number(raw)];
    if (schema.format === "date-time") return [true, new Date(raw).toISOString()];
    return [true, raw];
  };
  const node = el("div", { class: "field" }, el("label", { for: id, text: labelFor(name, schema, required) }), input, help);
  return { node, read };
}

/** Build the question; `send(message)` returns false when it could not be sent. */
export function elicitationPrompt(event, send) {
  const id = `elicit-${++counter}`;
  const schema = event.schema || {};
  const required = new Set(schema.required || []);
  const problem = el("p", { class: "field-error", role: "alert", hidden: true });
  const form = el("form", { class: "elicitation", "aria-labelledby": `${id}-title`, novalidate: false,
    dataset: { requestId: event.request_id } },
    el("p", { class: "elicit-title", id: `${id}-title` }, el("strong", { text: "A tool asks: " }), el("span", { text: event.message || "" })));

  const url = schema["x-url"] ? safeHttpUrl(schema["x-url"]) : null;
  const fields = [];
  if (schema["x-url"]) {
    form.append(url
      ? el("p", {}, el("a", { href: url, target: "_blank", rel: "noopener noreferrer", class: "btn", text: "Open the page" }), " ",
        el("span", { class: "muted small url-text", text: url }))
      : el("p", { class: "field-error", text: "The server sent a link that is not http(s); it is not shown." }));
  } else {
    for (const [name, prop] of Object.entries(schema.properties || {})) {
      const field = buildField(name, prop || {}, required.has(name), id);
      fields.push({ name, ...field });
      form.append(field.node);
    }
  }
  const accept = el("button", { type: "submit", class: "btn primary", text: url ? "Done" : "Accept" });
  const decline = el("button", { type: "button", class: "btn", text: "Decline" });
  const cancel = el("button", { type: "button", class: "btn", text: "Cancel" });
  form.append(problem, el("div", { class: "actions" }, accept, decline, cancel));

  const answer = (action, content) => {
    const message = { type: "elicitation_response", request_id: event.request_id, action };
    if (content) message.content = content;
    if (!send(message)) {
      problem.textContent = "Not connected: your answer was not sent.";
      problem.hidden = false;
      return;
    }
    const text = { accept: "Answer sent.", decline: "You declined to answer.", cancel: "Cancelled." }[action];
    form.replaceWith(el("p", { class: `elicit-answer answer-${action}`, text }));
  };

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    if (!form.reportValidity()) return;
    if (url) return answer("accept");
    const content = {};
    for (const field of fields) {
      const [present, value] = field.read();
      if (present) content[field.name] = value;
    }
    answer("accept", content);
  });
  decline.addEventListener("click", () => answer("decline"));
  cancel.addEventListener("click", () => answer("cancel"));
  return form;
}
