"""A hand-written stdio MCP server (standard library only) that writes
garbage to its protocol channel.

SDK-built Python servers divert stray prints away from stdout, so they cannot
break the wire; servers written in other ways (a `console.log` in a Node
server, a banner printed by a wrapper script) can.  This one speaks the
older handshake (`initialize`) and answers `server/discover` with "method
not found", as such servers do.

    --banner   print two non-JSON lines before the first message
"""

from __future__ import annotations

import json
import os
import sys

VERSION = "2025-06-18"
SUPPORTED = {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}

TOOLS = [
    {
        "name": "echo",
        "description": "Return the text.",
        "annotations": {"readOnlyHint": True},
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    },
    {
        "name": "noisy",
        "description": "Print non-JSON lines, then answer.",
        "annotations": {"readOnlyHint": True},
        "inputSchema": {"type": "object", "properties": {}},
    },
    {
        "name": "binary_noise",
        "description": "Print a line that is not UTF-8, then answer.",
        "annotations": {"readOnlyHint": True},
        "inputSchema": {"type": "object", "properties": {}},
    },
    {
        "name": "bad_result",
        "description": "Answer with a result that is not a CallToolResult.",
        "annotations": {"readOnlyHint": True},
        "inputSchema": {"type": "object", "properties": {}},
    },
    {
        "name": "cut_and_exit",
        "description": "Write half a message, then exit.",
        "annotations": {"readOnlyHint": True},
        "inputSchema": {"type": "object", "properties": {}},
    },
]


def write(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def send(message: dict) -> None:
    write((json.dumps(message) + "\n").encode())


def text_result(text: str) -> dict:
    return {"content": [{"type": "text", "text": text}], "isError": False}


def call_tool(request_id: object, name: str, arguments: dict) -> None:
    if name == "echo":
        send({"jsonrpc": "2.0", "id": request_id, "result": text_result(str(arguments.get("text", "")))})
    elif name == "noisy":
        write(b"console.log: handling a call\n{not json either\n[1, 2, 3]\n")
        send({"jsonrpc": "2.0", "id": 987654, "result": {}})  # an answer to a request nobody sent
        send({"jsonrpc": "2.0", "id": request_id, "result": text_result("answered after the noise")})
    elif name == "binary_noise":
        write(b"\xff\xfe\xfa not utf-8 \x80\n")
        send({"jsonrpc": "2.0", "id": request_id, "result": text_result("answered after binary noise")})
    elif name == "bad_result":
        send({"jsonrpc": "2.0", "id": request_id, "result": {"content": "this should be a list", "isError": "maybe"}})
    elif name == "cut_and_exit":
        write(b'{"jsonrpc": "2.0", "id": ' + json.dumps(request_id).encode() + b', "result": {"cont')
        os._exit(4)
    else:
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32602, "message": f"unknown tool {name}"}})


def handle(message: dict) -> None:
    method, request_id = message.get("method"), message.get("id")
    if request_id is None:
        return  # notifications (initialized, cancelled, ...) need no answer
    params = message.get("params") or {}
    if method == "initialize":
        asked = params.get("protocolVersion")
        send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "result": {
                    "protocolVersion": asked if asked in SUPPORTED else VERSION,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "rawstdio", "version": "0.0.1"},
                },
            }
        )
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": request_id, "result": {}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        call_tool(request_id, params.get("name", ""), params.get("arguments") or {})
    else:
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": f"method not found: {method}"}})


def main() -> None:
    if "--banner" in sys.argv:
        write(b"rawstdio 0.0.1 starting (this banner breaks the protocol)\n\n*** debug mode ***\n")
    for line in sys.stdin.buffer:
        line = line.strip()
        if not line:
            continue
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict):
            handle(message)


if __name__ == "__main__":
    main()
