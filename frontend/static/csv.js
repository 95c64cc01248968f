// CSV to rows (RFC 4180: quoted fields, doubled quotes, newlines inside
// quotes, CRLF), and rows to a table built with textContent only.

import { el } from "./dom.js";

export function guessDelimiter(text) {
  const firstLine = text.split(/\r?\n/, 1)[0] || "";
  const counts = [",", ";", "\t"].map((d) => [d, firstLine.split(d).length - 1]);
  counts.sort((a, b) => b[1] - a[1]);
  return counts[0][1] > 0 ? counts[0][0] : ",";
}

export function parseCsv(text, delimiter = guessDelimiter(text)) {
  const rows = [];
  let row = [];
  let field = "";
  let quoted = false;
  let i = 0;
  if (text.charCodeAt(0) === 0xfeff) i = 1; // byte order mark
  for (; i < text.length; i += 1) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i += 1;
        } else {
          quoted = false;
        }
      } else {
        field += ch;
      }
    } else if (ch === '"' && field === "") {
      quoted = true;
    } else if (ch === delimiter) {
      row.push(field);
      field = "";
    } else if (ch === "\n" || ch === "\r") {
      if (ch === "\r" && text[i + 1] === "\n") i += 1;
      row.push(field);
      rows.push(row);
      row = [];
      field = "";
    } else {
      field += ch;
    }
  }
  if (field !== "" || row.length) {
    row.push(field);
    rows.push(row);
  }
  return rows;
}

export function csvTable(text, maxRows = 1000) {
  const rows = parseCsv(text);
  if (!rows.length) return el("p", { class: "muted", text: "The file is empty." });
  const [header, ...body] = rows;
  const width = Math.max(...rows.slice(0, maxRows + 1).map((r) => r.length));
  const table = el("table", { class: "csv-table" },
    el("thead", {}, el("tr", {}, Array.from({ length: width }, (_, i) => el("th", { scope: "col", text: header[i] ?? "" })))),
    el("tbody", {}, body.slice(0, maxRows).map((r) => el("tr", {}, Array.from({ length: width }, (_, i) => el("td", { text: r[i] ?? "" }))))));
  const wrap = el("div", { class: "table-wrap" }, table);
  const caption = `${body.length.toLocaleString()} row${body.length === 1 ? "" : "s"} × ${width} column${width === 1 ? "" : "s"}` +
    (body.length > maxRows ? ` (first ${maxRows.toLocaleString()} shown)` : "");
  return el("div", {}, el("p", { class: "muted small", text: caption }), wrap);
}
