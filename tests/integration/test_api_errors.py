"""No request of any shape reaches a server error, and an unhandled one is recorded
(issue 38): signed-link parameters are data, the app's error model answers everywhere."""

from __future__ import annotations

import io
import json
import logging
import socket

import httpx
import pytest
from starlette.testclient import TestClient

from switchboard.logs import ConsoleLines, enable_console, flush_logs
from switchboard.services import build_services
from switchboard.web.app import create_app
from tests.support.harness import free_port, make_settings, serve_app, write_config


@pytest.fixture(scope="module")
def dev_app(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("api-errors")
    write_config(tmp / "defaults", servers={})
    settings = make_settings(tmp)
    services = build_services(settings, environ={})
    app = create_app(settings, services=services)

    async def boom() -> None:
        raise RuntimeError("a bug in a handler")

    app.add_api_route("/api/test-only/boom", boom)  # a route with a bug, to see how one is reported
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client, services, tmp


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ({"u": "dev@localhost", "e": "9999999999", "s": "é" * 64}, 403),
        ({"u": "dev@localhost", "e": "9999999999", "s": "\x00"}, 403),
        ({"u": "ü\U0001f600", "e": "9999999999", "s": "ab" * 32}, 403),
        ({"u": "dev@localhost", "e": "-1", "s": ""}, 403),
    ],
)
def test_any_signed_link_parameter_is_data_never_a_server_error(dev_app, query, status):
    client, _, _ = dev_app
    response = client.get("/api/files/ünïcode-\U0001f600/content", params=query)
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == "forbidden"


def test_a_valid_link_still_opens_and_a_non_ascii_signature_is_refused(dev_app):
    client, services, _ = dev_app
    file_id = client.post("/api/files", files={"file": ("a.txt", b"hello", "text/plain")}).json()["id"]
    url = "/api/files/" + services.signer.url(file_id, "dev@localhost").split("/api/files/", 1)[1]
    assert client.get(url).content == b"hello"
    sig = url.rsplit("&s=", 1)[1]
    bad = url.replace("&s=" + sig, "&s=" + "é" + sig[1:])
    assert client.get(bad).status_code == 403
    assert services.signer.open_notice("dev@localhost", "payload.é") is None


def _records(tmp, event):
    lines = (tmp / "logs" / "app.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r.get("event") == event]


def test_an_unhandled_error_is_one_record_one_console_line_and_an_answer_with_its_request_id(dev_app):
    client, _, tmp = dev_app
    out = io.StringIO()
    enable_console(out)
    try:
        response = client.get("/api/test-only/boom")
    finally:
        root = logging.getLogger("switchboard")
        for handler in [h for h in root.handlers if isinstance(h, ConsoleLines)]:
            root.removeHandler(handler)
    assert response.status_code == 500
    error = response.json()["error"]
    assert error["code"] == "internal" and error["action"]
    request_id = error["request_id"]
    assert response.headers["x-request-id"] == request_id and request_id in error["message"]
    flush_logs()
    (record,) = [r for r in _records(tmp, "unhandled_error") if r["request_id"] == request_id]
    assert record["path"] == "/api/test-only/boom" and record["method"] == "GET"
    assert "RuntimeError: a bug in a handler" in record["exc"]
    assert out.getvalue().splitlines() == [
        f"ERROR on GET /api/test-only/boom: RuntimeError (request id {request_id}; traceback in app.jsonl)"
    ]


def test_the_http_parsers_per_request_noise_goes_to_the_log_at_debug_not_the_console(tmp_path, capfd):
    """A CR inside a header: of the request (uvicorn's parser) and of a multipart part (python-multipart's)."""
    write_config(tmp_path / "defaults", servers={})
    settings = make_settings(tmp_path)
    port = free_port()
    quiet = logging.getLogger("switchboard.http")
    quiet.setLevel(logging.DEBUG)
    try:
        with serve_app(create_app(settings, services=build_services(settings, environ={})), port) as base:
            with socket.create_connection(("127.0.0.1", port)) as sock:
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: a\rb\r\n\r\n")
                assert sock.recv(1000).startswith(b"HTTP/1.1 400")
            multipart = {"content-type": "multipart/form-data; boundary=x"}
            bad = httpx.post(f"{base}/api/files", content=b"--x\r\nX\rA: b\r\n\r\n", headers=multipart)
            assert bad.status_code == 400
    finally:
        quiet.setLevel(logging.NOTSET)
    flush_logs()
    err = capfd.readouterr().err
    assert "Invalid HTTP request" not in err and "invalid character" not in err
    messages = [r["msg"] for r in _records(tmp_path, "bad_http") if r["level"] == "debug"]
    assert len(messages) == 2 and "Found invalid character 13 in header" in messages[1]


def test_starlettes_own_errors_answer_in_the_apps_error_model(dev_app):
    client, _, _ = dev_app
    missing = client.get("/api/no-such-thing")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"
    options = client.options("/api/tokens")
    assert options.status_code == 405
    assert set(options.headers["allow"].split(", ")) >= {"GET", "POST"}
    assert options.json()["error"]["code"] == "method_not_allowed"
    bad = client.post(
        "/api/files", content=b"--x\r\nX-A: a\rb\r\n\r\n", headers={"content-type": "multipart/form-data; boundary=x"}
    )
    assert bad.status_code == 400, bad.text
    error = bad.json()["error"]
    assert error["code"] == "bad_request" and "not valid multipart data" in error["message"] and error["action"]


def test_the_openapi_document_says_what_the_code_enforces(dev_app):
    client, services, _ = dev_app
    doc = client.get("/openapi.json").json()
    error = doc["components"]["schemas"]["ErrorModel"]
    assert error["properties"]["error"]["$ref"].endswith("/AppErrorDetail")
    config = doc["paths"]["/api/config"]["get"]
    assert {"400", "401", "403", "503"} <= set(config["responses"])
    assert config["responses"]["403"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorModel")
    (level,) = [p for p in config["parameters"] if p["name"] == "compliance_level"]
    assert level["schema"]["enum"] == [*services.config.compliance.names, ""] != [""]
    (header,) = [p for p in doc["paths"]["/v1/models"]["get"]["parameters"] if p["in"] == "header"]
    assert header["schema"]["enum"] == [*services.config.compliance.names, ""]
    assert doc["paths"]["/api/apps/{call_id}/rpc"]["post"]["requestBody"]["required"] is True
    assert "409" in doc["paths"]["/api/conversations/{conversation_id}"]["delete"]["responses"]
    assert "text/event-stream" in doc["paths"]["/api/chat"]["post"]["responses"]["200"]["content"]


def test_requests_the_document_allows_are_served_and_those_it_forbids_refused(dev_app):
    client, _, _ = dev_app
    assert client.get("/api/config", params={"compliance_level": ""}).status_code == 200
    assert client.get("/v1/models", headers={"X-Switchboard-Compliance-Level": ""}).status_code == 200
    for number in ("0.5", "1700000000", "-1e3", "nan"):
        refused = client.get("/api/conversations", params={"before": number})
        assert refused.status_code == 400 and "date-time" in refused.json()["error"]["message"]
    assert client.get("/api/conversations", params={"before": "2026-01-01T00:00:00"}).status_code == 400
    page = client.get("/api/conversations", params={"before": "2026-01-01T00:00:00Z"})
    assert page.status_code == 200 and page.json() == {"conversations": []}


def test_the_chat_stream_is_described_with_its_event_models(dev_app):
    client, _, _ = dev_app
    doc = client.get("/openapi.json").json()
    ok = doc["paths"]["/api/chat"]["post"]["responses"]["200"]
    events = ok["content"]["text/event-stream"]["x-event-data"]["oneOf"]
    names = {ref["$ref"].rsplit("/", 1)[1] for ref in events}
    assert {"TokenEvent", "ToolStart", "ApprovalRequest", "MessageDone", "ErrorEvent"} <= names
    assert names <= set(doc["components"]["schemas"]) and "`MessageDone`" in ok["description"]
