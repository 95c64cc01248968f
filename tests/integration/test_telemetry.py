"""Traces and metrics of a real `switchboard serve`: spans reach a real OTLP/HTTP receiver with the
GenAI and MCP names and attributes, the trace context reaches the MCP server in `params._meta`, and
`/metrics` counts the same turn, for administrators or the scrape token only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from websockets.sync.client import connect

from switchboard.settings import PROJECT_ROOT
from tests.support.harness import free_port, wait_for_port, wait_ready, write_config

pytestmark = pytest.mark.timeout(180)  # real app processes start (slowly on a busy machine)

TRACED = PROJECT_ROOT / "tests" / "support" / "servers" / "traced.py"


class _Receiver:
    """An OTLP/HTTP trace receiver (protobuf, as the SDK's exporter sends)."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        received = self.spans

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                for resource in request.resource_spans:
                    service = {a.key: a.value.string_value for a in resource.resource.attributes}.get("service.name")
                    for scope in resource.scope_spans:
                        for span in scope.spans:
                            received.append(
                                {
                                    "name": span.name,
                                    "trace_id": span.trace_id.hex(),
                                    "span_id": span.span_id.hex(),
                                    "parent": span.parent_span_id.hex(),
                                    "service": service,
                                    "status": span.status.code,
                                    "attributes": {a.key: _value(a.value) for a in span.attributes},
                                }
                            )
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None


@pytest.fixture
def receiver() -> Iterator[_Receiver]:
    rec = _Receiver()
    yield rec
    rec.server.shutdown()


def _serve(tmp_path: Path, extra_env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    write_config(
        tmp_path / "defaults",
        servers={"traced": {"command": "python", "args": [str(TRACED)], "approval": "never"}},
        groups={"*": ["users", "admin"]},
    )
    (tmp_path / "overrides").mkdir(exist_ok=True)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(
        {
            "SWITCHBOARD_DEFAULTS_DIR": str(tmp_path / "defaults"),
            "SWITCHBOARD_CONFIG_DIR": str(tmp_path / "overrides"),
            "SWITCHBOARD_DATA_DIR": str(tmp_path / "data"),
            "SWITCHBOARD_LOG_DIR": str(tmp_path / "logs"),
            "SWITCHBOARD_METRICS_TOKEN": "scrape-secret",
            **extra_env,
        }
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "switchboard", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_for_port(port, proc, "switchboard serve", timeout_s=60)
    base = f"http://127.0.0.1:{port}"
    wait_ready(base, 90, "the traced server")
    return proc, base


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()


def _tool_turn(base: str) -> list[tuple[str, dict[str, Any]]]:
    events = []
    with httpx.stream("POST", f"{base}/api/chat", json={"content": "traced_traceparent {}"}, timeout=60) as response:
        assert response.status_code == 200
        kind = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: ") and kind:
                events.append((kind, json.loads(line[6:])))
    return events


def test_a_tool_turn_is_traced_from_the_turn_to_the_mcp_server(tmp_path, receiver):
    proc, base = _serve(
        tmp_path,
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
            "OTEL_BSP_SCHEDULE_DELAY": "100",
            "OTEL_SERVICE_NAME": "switchboard-test",
        },
    )
    try:
        events = _tool_turn(base)
        result = next(data for kind, data in events if kind == "tool_result")
        assert result["ok"], result
        deadline = time.monotonic() + 20
        while not any(s["name"] == "tools/call traced_traceparent" for s in receiver.spans):
            assert time.monotonic() < deadline, [s["name"] for s in receiver.spans]
            time.sleep(0.1)
        time.sleep(0.5)  # the turn's span ends after its last event
    finally:
        _stop(proc)  # shutting down sends what is still buffered
    spans = receiver.spans
    by_name = {s["name"]: s for s in spans}
    turn = by_name["invoke_agent switchboard"]
    model = by_name["chat demo"]
    call = by_name["tools/call traced_traceparent"]
    assert turn["service"] == "switchboard-test"
    assert turn["attributes"]["gen_ai.operation.name"] == "invoke_agent"
    assert turn["attributes"]["gen_ai.response.finish_reasons"] == ["stop"]
    assert model["attributes"]["gen_ai.operation.name"] == "chat"
    assert model["attributes"]["gen_ai.request.model"] == "demo"
    assert model["attributes"]["gen_ai.provider.name"] == "switchboard"
    assert call["attributes"]["mcp.method.name"] == "tools/call"
    assert call["attributes"]["gen_ai.tool.name"] == "traced_traceparent"
    assert "error.type" not in call["attributes"]
    # One trace: the model call and the tool call hang under the turn.
    assert model["trace_id"] == call["trace_id"] == turn["trace_id"]
    assert model["parent"] == turn["span_id"] and call["parent"] == turn["span_id"]
    # The server got the trace context in params._meta: same trace, a span inside the tool call's.
    traceparent = result["content"].strip()
    _version, trace_id, parent_id, _flags = traceparent.split("-")
    assert trace_id == turn["trace_id"]
    ids = {s["span_id"]: s for s in spans}
    chain = [parent_id]  # from the span the server saw, up through its parents
    while ids.get(chain[-1], {}).get("parent"):
        chain.append(ids[chain[-1]]["parent"])
    assert call["span_id"] in chain, [ids[i]["name"] for i in chain if i in ids]


def test_metrics_count_turns_and_calls_for_admins_and_the_scrape_token_only(tmp_path):
    proc, base = _serve(tmp_path, {})
    try:
        events = _tool_turn(base)
        assert any(kind == "message_done" for kind, _ in events)
        text = httpx.get(f"{base}/metrics", headers={"Authorization": "Bearer scrape-secret"}).text
        assert httpx.get(f"{base}/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert httpx.get(f"{base}/metrics").status_code == 200  # the dev user is an administrator here
        with httpx.stream("POST", f"{base}/api/chat", json={"content": "hello"}, timeout=60) as response:
            response.read()
        with connect(base.replace("http", "ws") + "/ws") as ws:
            json.loads(ws.recv(timeout=10))  # session
            while_open = httpx.get(f"{base}/metrics", headers={"Authorization": "Bearer scrape-secret"}).text
        deadline = time.monotonic() + 10
        while "switchboard_open_sessions 0.0" not in (after := httpx.get(f"{base}/metrics").text):
            assert time.monotonic() < deadline, after
            time.sleep(0.1)
    finally:
        _stop(proc)
    assert 'switchboard_turns_total{finish_reason="stop"} 1.0' in text
    assert 'switchboard_tool_calls_total{mcp_server="traced",outcome="ok"} 1.0' in text
    assert (
        'mcp_client_operation_duration_seconds_count{error_type="",mcp_method_name="tools/call",mcp_server="traced"} 1.0'
        in text
    )
    assert (
        'gen_ai_client_operation_duration_seconds_count{error_type="",gen_ai_operation_name="chat",gen_ai_request_model="demo"} 2.0'
        in text
    )
    assert "switchboard_store_operation_duration_seconds_count" in text
    assert "switchboard_open_sessions 1.0" in while_open


def test_metrics_add_up_every_worker_process(tmp_path, postgres_url):
    """With `serve --workers 2` any worker may answer the scrape, and each answer counts both."""
    write_config(tmp_path / "defaults", servers={}, groups={"*": ["users"]})
    (tmp_path / "overrides").mkdir()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PROMETHEUS_"))}
    env.update(
        {
            "SWITCHBOARD_DEFAULTS_DIR": str(tmp_path / "defaults"),
            "SWITCHBOARD_CONFIG_DIR": str(tmp_path / "overrides"),
            "SWITCHBOARD_DATA_DIR": str(tmp_path / "data"),
            "SWITCHBOARD_LOG_DIR": str(tmp_path / "logs"),
            "SWITCHBOARD_METRICS_TOKEN": "scrape-secret",
            "SWITCHBOARD_DATABASE_URL": postgres_url,
        }
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "switchboard", "serve", "--port", str(port), "--workers", "2"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for_port(port, proc, "switchboard serve --workers 2", timeout_s=60)
        for _ in range(6):  # new connections: both workers get some of the turns
            with (
                httpx.Client() as client,
                client.stream("POST", f"{base}/api/chat", json={"content": "hi"}, timeout=60) as r,
            ):
                r.read()
        scrapes = []
        for _ in range(6):
            with httpx.Client() as client:
                scrapes.append(client.get(f"{base}/metrics", headers={"Authorization": "Bearer scrape-secret"}).text)
    finally:
        _stop(proc)
    for text in scrapes:
        assert 'switchboard_turns_total{finish_reason="stop"} 6.0' in text, text[:2000]
    assert (tmp_path / "data" / "metrics").is_dir()


def test_a_policy_hook_is_a_span_inside_the_turn(tmp_path, receiver):
    overrides = tmp_path / "overrides"
    overrides.mkdir()
    (overrides / "all.cedar").write_text("permit (principal, action, resource);")
    hooks = [{"id": "cedar-all", "event": "pre_tool", "handler": {"type": "cedar", "policies": "all.cedar"}}]
    (overrides / "hooks.json").write_text(json.dumps({"hooks": hooks}))
    proc, base = _serve(tmp_path, {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "100"})
    try:
        assert next(data for kind, data in _tool_turn(base) if kind == "tool_result")["ok"]
        deadline = time.monotonic() + 20
        while not any(s["name"] == "invoke_agent switchboard" for s in receiver.spans):
            assert time.monotonic() < deadline, [s["name"] for s in receiver.spans]
            time.sleep(0.1)
    finally:
        _stop(proc)
    by_name = {s["name"]: s for s in receiver.spans}
    hook, turn = by_name["hook pre_tool"], by_name["invoke_agent switchboard"]
    assert hook["attributes"]["switchboard.hook.id"] == "cedar-all"
    assert hook["attributes"]["switchboard.hook.decision"] == "allow"
    assert hook["trace_id"] == turn["trace_id"] and hook["parent"] == turn["span_id"]
