"""The MCP App server of bench/apps.py: `bench_open {"calls": N}` opens an app that, once it has
its tool result, makes N `tools/call noop` through the host one after the other and writes each
round trip (ms, measured inside the app) into `#timings` as JSON; `noop` is also the model's."""

from __future__ import annotations

from fastmcp import FastMCP
from fastmcp.apps.config import AppConfig

mcp = FastMCP("bench")
URI = "ui://bench/app.html"

APP_HTML = r"""<!doctype html><html><head><meta charset="utf-8"><title>bench</title></head><body>
<p id="state">starting</p><pre id="timings"></pre>
<script>
let next = 1; const waiting = new Map(); let input = {};
const send = (m) => window.parent.postMessage({ jsonrpc: "2.0", ...m }, "*");
const request = (method, params) => new Promise((resolve) => { const id = next++; waiting.set(id, resolve); send({ id, method, params }); });
window.addEventListener("message", async (event) => {
  const d = event.data || {};
  if (d.id !== undefined && !d.method && waiting.has(d.id)) { waiting.get(d.id)(d); waiting.delete(d.id); return; }
  if (d.method === "ui/notifications/tool-input") input = d.params.arguments || {};
  if (d.method === "ui/resource-teardown") send({ id: d.id, result: {} });
  if (d.method === "ui/notifications/tool-result") {
    const times = [];
    for (let i = 0; i < (input.calls || 0); i++) {
      const t0 = performance.now();
      const answer = await request("tools/call", { name: "noop", arguments: {} });
      if (answer.error) { document.getElementById("state").textContent = "error: " + answer.error.message; return; }
      times.push(performance.now() - t0);
      await new Promise((r) => setTimeout(r, Math.max(0, 110 - (performance.now() - t0))));  // under the 10/s limits
    }
    document.getElementById("timings").textContent = JSON.stringify(times);
    document.getElementById("state").textContent = "done";
  }
});
request("ui/initialize", { appInfo: { name: "bench", version: "1" }, appCapabilities: {}, protocolVersion: "2026-01-26" })
  .then(() => send({ method: "ui/notifications/initialized", params: {} }));
</script></body></html>"""


@mcp.resource(URI, name="bench app", mime_type="text/html;profile=mcp-app", app=AppConfig())
def app_html() -> str:
    return APP_HTML


@mcp.tool(app=AppConfig(resource_uri=URI), annotations={"readOnlyHint": True})
def bench_open(calls: int = 0) -> str:
    """Open the bench app; it then calls noop `calls` times through the host."""
    return f"opened ({calls} calls to make)"


@mcp.tool(annotations={"readOnlyHint": True})
def noop() -> str:
    """Does nothing."""
    return "ok"


if __name__ == "__main__":
    mcp.run(show_banner=False)
