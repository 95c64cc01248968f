"""An MCP server (stdio) for the browser tests: one artifact of every kind the
canvas shows, a rich elicitation form, and hostile text everywhere a tool
can put it (results, logs, artifact names and bodies, its own title)."""

from __future__ import annotations

import base64
import json

import mcp_types
from fastmcp import Context, FastMCP

XSS = [
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    '"><svg onload=alert(1)>',
    "[click me](javascript:alert(1))",
    '<a href="javascript:alert(1)">js link</a>',
    "<iframe src=javascript:alert(1)></iframe>",
]

# A 2x2 PNG (red, green / blue, white)
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAE0lEQVR4nGP4z8DAsACIGf4DAQAclwWcT4AauwAAAABJRU5ErkJggg=="
)

mcp = FastMCP("fixtures")


def _pdf(text: str) -> bytes:
    """A one-page PDF showing `text`, with a correct cross-reference table."""
    stream = f"BT /F1 24 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def _b64(data: bytes | str) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


@mcp.tool(annotations={"readOnlyHint": True})
def files() -> dict:
    """Return one artifact of each kind: PDF, markdown, CSV, JSON, code."""
    csv_text = 'city,population,note\nOslo,709037,"capital, largest"\n"Bergen",291940,"said ""hi"""\nTromsø,77544,"two\nlines"\n'
    return {
        "results": {"summary": "5 files"},
        "artifacts": [
            {"name": "report.pdf", "b64": _b64(_pdf("Quarterly report")), "mime": "application/pdf"},
            {
                "name": "notes.md",
                "text": "# Notes\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```py\nprint('hi')\n```\n",
                "mime": "text/markdown",
            },
            {"name": "cities.csv", "text": csv_text, "mime": "text/csv"},
            {"name": "data.json", "text": json.dumps({"ok": True, "items": [1, 2, 3]}), "mime": "application/json"},
            {"name": "script.py", "text": "def main():\n    return '<b>not bold</b>'\n", "mime": "text/x-python"},
        ],
        "display": {"open_canvas": True, "primary_file": "report.pdf"},
    }


@mcp.tool(annotations={"readOnlyHint": True}, title='Hostile <img src=x onerror=alert("title")>')
async def hostile(ctx: Context) -> dict:
    """Put script-looking text in every place a tool controls. <script>alert('description')</script>"""
    await ctx.info("log line " + XSS[0])
    await ctx.report_progress(1, 2, "progress " + XSS[2])
    html = (
        "<h1 id=inside>Sandboxed page</h1>"
        "<script>alert('from the artifact'); try { parent.document.body.dataset.pwned = '1' } catch (e) {"
        " document.getElementById('inside').textContent = 'blocked: ' + e.name }</script>"
        "<img src=x onerror=\"alert('img in artifact')\">"
    )
    markdown = "# Hostile notes\n\n" + "\n\n".join(XSS) + "\n"
    csv_text = "col,<b>bold</b>\n" + "\n".join(f'"{p.replace(chr(34), chr(34) * 2)}",x' for p in XSS) + "\n"
    return {
        "results": {"summary": "hostile " + XSS[0] + " " + XSS[1], "payloads": XSS},
        "artifacts": [
            {"name": "<img src=x onerror=alert(1)>.png", "b64": _b64(PNG), "mime": "image/png"},
            {"name": '"><svg onload=alert(1)>.md', "text": markdown, "mime": "text/markdown"},
            {"name": "<b onmouseover=alert(1)>x.csv", "text": csv_text, "mime": "text/csv"},
            {"name": "<iframe onload=alert(1)>.html", "text": html, "mime": "text/html"},
            {"name": "hostile.txt", "text": "\n".join(XSS), "mime": "text/plain"},
        ],
        "display": {"open_canvas": True, "primary_file": "<iframe onload=alert(1)>.html"},
    }


@mcp.tool(annotations={"readOnlyHint": True})
def scripted_page() -> dict:
    """An HTML artifact whose script, when it runs, writes a marker into the page."""
    html = "<p id=marker>script did not run</p><script>document.getElementById('marker').textContent = 'script ran'</script>"
    return {
        "results": {"summary": "1 page"},
        "artifacts": [{"name": "scripted.html", "text": html, "mime": "text/html"}],
        "display": {"open_canvas": True},
    }


@mcp.tool(annotations={"readOnlyHint": True})
def stats() -> str:
    """A result that is pretty-printed JSON text, without a summary."""
    return json.dumps(
        {"rows": 1204, "columns": 7, "numeric": ["price", "qty"], "source": {"name": "sales.csv"}}, indent=2
    )


@mcp.tool(annotations={"readOnlyHint": True})
def fail_hostile() -> str:
    """Fail with a message full of markup."""
    from fastmcp.exceptions import ToolError

    raise ToolError("failed: " + " ".join(XSS))


ORDER_SCHEMA = {
    "type": "object",
    "properties": {
        "email": {"type": "string", "format": "email", "title": "Email"},
        "size": {"type": "string", "enum": ["small", "medium", "large"], "title": "Size"},
        "quantity": {"type": "integer", "minimum": 1, "maximum": 10, "title": "Quantity"},
        "gift": {"type": "boolean", "title": "Gift wrap", "default": False},
        "extras": {
            "type": "array",
            "title": "Extras",
            "items": {"type": "string", "enum": ["cheese", "olives", "basil"]},
        },
        "when": {"type": "string", "format": "date", "title": "Delivery date"},
    },
    "required": ["email", "size", "quantity"],
}


def _describe(action: str, content: dict | None) -> str:
    if action != "accept":
        return f"no order ({action})"
    return "order: " + json.dumps(content, sort_keys=True)


@mcp.tool(annotations={"readOnlyHint": True})
async def order(ctx: Context) -> str:
    """Ask for an order: email, enum, number, boolean, multi-select, date (elicitation)."""
    # 2026-07-28 connections ask with the guard pattern (return InputRequiredResult
    # and read the answer when called again); older ones with a server request.
    answers = ctx.input_responses or {}
    if "order" in answers:
        return _describe(answers["order"].action, answers["order"].content)
    if ctx._is_modern_protocol():
        request = mcp_types.ElicitRequest(
            params=mcp_types.ElicitRequestFormParams(message="Your order?", requested_schema=ORDER_SCHEMA)
        )
        return mcp_types.InputRequiredResult(input_requests={"order": request})
    result = await ctx.session.elicit(
        message="Your order?", requested_schema=ORDER_SCHEMA, related_request_id=ctx.request_id
    )
    return _describe(result.action, result.content)


if __name__ == "__main__":
    mcp.run(show_banner=False)
