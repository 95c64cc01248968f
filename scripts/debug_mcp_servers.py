"""Connect to each configured MCP server and report status, tools and timing.

Uses the app's own config loader and ServerPool, so what it reports is what
`switchboard serve` would see.  Run from the project root:

    uv run python scripts/debug_mcp_servers.py [--server NAME] [--json]
    uv run python scripts/debug_mcp_servers.py --call toolbox_echo --args '{"text": "hi"}'

Exit codes: 0 all enabled servers ready (and the call, if any, succeeded),
1 a server or the call failed, 2 bad command line.
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import argparse
import asyncio
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from switchboard.config import McpConfig, load_mcp_config
from switchboard.errors import SwitchboardError, ToolError
from switchboard.logs import setup_logging
from switchboard.settings import Settings

if TYPE_CHECKING:
    from switchboard.tools import ServerPool, ServerStatus, ToolInfo, ToolOutcome


class _ConsoleSink:
    """A tool call's side traffic: progress and logs to stderr; no user to ask, no model to sample."""

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        of = f"/{total:g}" if total is not None else ""
        print(f"  progress {progress:g}{of} {message or ''}".rstrip(), file=sys.stderr)

    async def log(self, level: str, message: str) -> None:
        print(f"  server log [{level}] {message}", file=sys.stderr)

    async def elicit(self, message: str, schema: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
        print(f"  elicitation declined (no user here): {message}", file=sys.stderr)
        return "decline", None

    async def sample(self, messages: list[dict[str, Any]], system_prompt: str | None, max_tokens: int) -> str:
        raise ToolError("sampling is not available in the debug script (no model)")


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", action="append", metavar="NAME", help="only this server (repeatable)")
    parser.add_argument("--call", metavar="TOOL", help="call a tool: qualified name (toolbox_echo) or server:tool")
    parser.add_argument("--args", default="{}", metavar="JSON", help="the call's arguments as a JSON object")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS", help="start-up limit (default 60)")
    parser.add_argument("--config-dir", type=Path, help="overrides folder (default: $SWITCHBOARD_CONFIG_DIR)")
    args = parser.parse_args(argv)
    if args.args != "{}" and not args.call:
        parser.error("--args needs --call")
    try:
        args.arguments = json.loads(args.args)
    except json.JSONDecodeError as exc:
        parser.error(f"--args is not valid JSON: {exc}")
    if not isinstance(args.arguments, dict):
        parser.error("--args must be a JSON object")
    return args


def _select(mcp: McpConfig, names: list[str] | None) -> McpConfig:
    if not names:
        return mcp
    known = set(mcp.servers) | set(mcp.errors)
    unknown = [n for n in names if n not in known]
    if unknown:
        print(f"error: no server named {', '.join(unknown)} (configured: {', '.join(sorted(known))})", file=sys.stderr)
        raise SystemExit(2)
    return McpConfig(
        servers={n: c for n, c in mcp.servers.items() if n in names},
        errors={n: e for n, e in mcp.errors.items() if n in names},
        file_errors=mcp.file_errors,
    )


def _find_tool(tools: list[ToolInfo], wanted: str) -> ToolInfo | None:
    for tool in tools:
        if tool.qualified_name == wanted or f"{tool.server}:{tool.name}" == wanted:
            return tool
    return None


async def _call(pool: ServerPool, wanted: str, arguments: dict[str, Any]) -> dict[str, Any]:
    tool = _find_tool(pool.registry.all(), wanted)
    if tool is None:
        return {"tool": wanted, "ok": False, "text": f"no ready server offers a tool named '{wanted}'"}
    try:
        outcome: ToolOutcome = await pool.call(tool, arguments, _ConsoleSink())
    except SwitchboardError as exc:
        return {"tool": tool.qualified_name, "ok": False, "text": exc.message}
    return {
        "tool": tool.qualified_name,
        "ok": outcome.ok,
        "text": outcome.text,
        "results": outcome.results,
        "artifacts": [{"name": a.name, "mime": a.mime, "size": len(a.data)} for a in outcome.artifacts],
        "display": outcome.display,
        "notes": outcome.notes,
        "duration_ms": outcome.duration_ms,
    }


def _server_report(status: ServerStatus, tools: list[ToolInfo], waited_s: float) -> dict[str, Any]:
    reason = status.reason
    if status.status == "starting" and reason is None:
        reason = f"still starting after {waited_s:g} s"
    return {
        "name": status.name,
        "status": status.status,
        "transport": status.transport,
        "protocol_version": status.protocol_version,
        "reason": reason,
        "stderr_tail": status.stderr_tail,
        "ready_after_s": status.ready_after_s,
        "tool_count": len(tools),
        "tools": [
            {"name": t.qualified_name, "tool": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in tools
        ],
    }


async def _inspect(mcp: McpConfig, settings: Settings, args: argparse.Namespace) -> dict[str, Any]:
    from switchboard.tools import ServerPool  # imports fastmcp (seconds): only once there is work to do

    # Servers' stderr goes to a folder of its own: a running app's per-server logs stay intact.
    log_dir = settings.log_dir / "debug"
    pool = ServerPool(mcp, project_root=settings.project_root, log_dir=log_dir, init_timeout_s=args.timeout)
    started = time.monotonic()
    pool.start()
    try:
        await pool.wait_settled(args.timeout)
        statuses, tools = pool.statuses(), pool.registry.all()
        servers = [_server_report(s, [t for t in tools if t.server == s.name], args.timeout) for s in statuses]
        report: dict[str, Any] = {
            "servers": servers,
            "elapsed_s": round(time.monotonic() - started, 3),
            "stderr_logs": str(log_dir / "servers"),
        }
        if args.call:
            report["call"] = await _call(pool, args.call, args.arguments)
    finally:
        await pool.stop()
    report["config_errors"] = [str(e) for e in mcp.file_errors]
    return report


def _indented(label: str, text: str) -> list[str]:
    return [f"    {label}:", *(f"      | {line}" for line in text.splitlines())]


def _print_server(server: dict[str, Any]) -> None:
    ready = f"  ready in {server['ready_after_s']:.2f} s" if server["ready_after_s"] is not None else ""
    count = f"  {server['tool_count']} tool(s)" if server["status"] == "ready" else ""
    version = f"  protocol {server['protocol_version']}" if server["protocol_version"] else ""
    print(f"{server['name']}  [{server['transport']}]  {server['status']}{version}{ready}{count}")
    if server["tools"]:
        print("    tools: " + ", ".join(t["name"] for t in server["tools"]))
    if server["status"] not in ("ready", "disabled"):
        print(f"    reason: {server['reason']}")
    if server["stderr_tail"]:
        print("\n".join(_indented("stderr (last lines)", server["stderr_tail"])))


def _print_call(call: dict[str, Any]) -> None:
    took = f" in {call['duration_ms']} ms" if "duration_ms" in call else ""
    print(f"\ncall {call['tool']}: {'ok' if call['ok'] else 'FAILED'}{took}")
    print("\n".join(f"    {line}" for line in (call["text"] or "(no text)").splitlines()))
    for artifact in call.get("artifacts", []):
        print(f"    artifact: {artifact['name']} ({artifact['mime']}, {artifact['size']} bytes)")
    for note in call.get("notes", []):
        print(f"    note: {note}")


def _print_human(report: dict[str, Any]) -> None:
    for error in report["config_errors"]:
        print(f"config error: {error}")
    for server in report["servers"]:
        _print_server(server)
    counts = Counter(server["status"] for server in report["servers"])
    summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "no servers configured"
    print(f"\n{len(report['servers'])} server(s): {summary}  ({report['elapsed_s']:.2f} s)")
    print(f"servers' stderr: {report['stderr_logs']}")
    if "call" in report:
        _print_call(report["call"])


def _failed(report: dict[str, Any]) -> bool:
    servers_bad = any(s["status"] not in ("ready", "disabled") for s in report["servers"])
    call_bad = "call" in report and not report["call"]["ok"]
    return servers_bad or call_bad or bool(report["config_errors"])


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    settings = Settings(**({"config_dir": args.config_dir} if args.config_dir else {}))
    setup_logging(settings.log_dir)  # the app's log file; fastmcp/mcp chatter stays off the console
    mcp = _select(load_mcp_config(settings.defaults_dir, settings.config_dir), args.server)
    try:
        report = asyncio.run(_inspect(mcp, settings, args))
    except KeyboardInterrupt:
        return 130
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        _print_human(report)
    return 1 if _failed(report) else 0


if __name__ == "__main__":
    sys.exit(main())
