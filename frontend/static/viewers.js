// One viewer per artifact type, for the canvas.  HTML artifacts live in an
// iframe sandboxed WITHOUT allow-same-origin and, unless their server is
// trusted with scripts, without allow-scripts (the server's CSP says the same); text is shown with textContent; only the server's sanitized
// markdown rendering is inserted as HTML.

import { csvTable } from "./csv.js";
import { el, prettyJson, setSanitizedHtml } from "./dom.js";
import { decorateCode } from "./messages.js";

const MAX_TEXT_BYTES = 5 * 1024 * 1024;
const TEXT_EXTENSIONS = new Set([
  "txt", "log", "py", "js", "mjs", "ts", "tsx", "jsx", "css", "sh", "bash", "yml", "yaml", "toml", "ini", "cfg",
  "xml", "sql", "rs", "go", "java", "c", "h", "cpp", "hpp", "rb", "php", "swift", "kt", "r", "tex", "diff", "patch",
]);

function extension(name) {
  const dot = String(name).lastIndexOf(".");
  return dot >= 0 ? String(name).slice(dot + 1).toLowerCase() : "";
}

export function viewerKind(artifact) {
  const mime = (artifact.mime || "").toLowerCase();
  const ext = extension(artifact.name);
  if (mime.startsWith("image/")) return "image";
  if (mime === "application/pdf") return "pdf";
  if (mime === "text/html") return "html";
  if (mime === "text/markdown" || mime === "text/x-markdown" || ext === "md" || ext === "markdown") return "markdown";
  if (mime === "text/csv" || mime === "text/tab-separated-values" || ext === "csv" || ext === "tsv") return "csv";
  if (mime === "application/json" || ext === "json") return "json";
  if (mime.startsWith("text/") || mime === "application/javascript" || mime === "application/xml" || TEXT_EXTENSIONS.has(ext)) return "text";
  return "none";
}

async function fetchText(url) {
  const res = await fetch(url, { credentials: "same-origin" });
  if (!res.ok) throw new Error(`the server answered ${res.status}`);
  return res.text();
}

async function fetchRendered(artifact) {
  const res = await fetch(`${artifact.url}/rendered`, { credentials: "same-origin" });
  if (!res.ok) throw new Error(`the server answered ${res.status}`);
  const body = await res.json();
  return String(body.html ?? "");
}

const BUILDERS = {
  image: (a) => {
    const img = el("img", { src: a.url, alt: a.name });
    // A few pixels shown at their size are invisible: enlarge, without smoothing.
    img.addEventListener("load", () => img.classList.toggle("tiny", img.naturalWidth < 64 && img.naturalHeight < 64));
    return el("div", { class: "viewer-image" }, img);
  },
  pdf: (a) => el("iframe", { class: "viewer-frame viewer-pdf", src: a.url, title: `PDF: ${a.name}` }),
  html: async (a) => {
    // Scripts stay off unless the artifact's server is trusted with them; the
    // server decides (and enforces it with the artifact's CSP), the frame follows.
    const res = await fetch(a.url, { credentials: "same-origin" });
    if (!res.ok) throw new Error(`the server answered ${res.status}`);
    const scripts = res.headers.get("X-Artifact-Scripts") === "allowed";
    res.body?.cancel();
    return el("iframe", { class: "viewer-frame viewer-html", src: a.url, sandbox: scripts ? "allow-scripts" : "",
      referrerpolicy: "no-referrer", title: `Page: ${a.name}`, dataset: { scripts: scripts ? "allowed" : "blocked" } });
  },
  markdown: async (a) => {
    const node = el("div", { class: "markdown viewer-markdown" });
    setSanitizedHtml(node, await fetchRendered(a));
    decorateCode(node);
    return node;
  },
  csv: async (a) => el("div", { class: "viewer-csv" }, csvTable(await fetchText(a.url))),
  json: async (a) => {
    const text = await fetchText(a.url);
    let shown = text;
    try {
      shown = prettyJson(JSON.parse(text));
    } catch {
      // not valid JSON: show it as it is
    }
    return el("pre", { class: "viewer-text viewer-json", text: shown });
  },
  text: async (a) => el("pre", { class: "viewer-text", text: await fetchText(a.url) }),
  none: (a) => el("div", { class: "viewer-none" },
    el("p", { text: "There is no preview for this kind of file." }),
    el("p", { class: "muted small", text: a.mime || "unknown type" })),
};

/** The viewer element for an artifact (may fetch). */
export async function buildViewer(artifact) {
  const kind = viewerKind(artifact);
  const textual = ["markdown", "csv", "json", "text"].includes(kind);
  if (textual && artifact.size > MAX_TEXT_BYTES) {
    return el("div", { class: "viewer-none" }, el("p", { text: "This file is too large to preview; download it instead." }));
  }
  try {
    const node = await BUILDERS[kind](artifact);
    node.dataset.viewer = kind;
    return node;
  } catch (exc) {
    return el("div", { class: "alert", role: "alert" }, el("strong", { text: "Could not show the file: " }),
      el("span", { text: exc.message }));
  }
}
