"""The app sandbox origin (web/sandbox/origin.py): what it serves, and the CSP an app runs under."""

from __future__ import annotations

import base64
import json

import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from switchboard.settings import Settings
from switchboard.web.sandbox.origin import SandboxMiddleware, SandboxPolicy, app_csp, page_csp


def policy(**values) -> SandboxPolicy:
    return SandboxPolicy.from_settings(Settings(_env_file=None, **values))  # type: ignore[call-arg]


def client(sandbox: SandboxPolicy) -> TestClient:
    inner = Starlette(routes=[Route("/api/config", lambda r: PlainTextResponse("the api"))])
    return TestClient(SandboxMiddleware(inner, sandbox))


def encoded(csp: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(csp).encode()).decode().rstrip("=")


def directives(policy_text: str) -> dict[str, str]:
    return {part.split(" ", 1)[0]: part.partition(" ")[2] for part in policy_text.split("; ")}


def test_the_default_policy_has_no_network_and_no_frames():
    got = directives(app_csp(None))
    assert got["default-src"] == "'none'"
    assert got["connect-src"] == "'none'"
    assert got["frame-src"] == "'none'"
    assert got["object-src"] == "'none'"
    assert "http" not in app_csp(None) and "'self'" not in got["script-src"]
    assert "'self'" not in got["connect-src"] + got["img-src"] + got["worker-src"]


def test_declared_origins_widen_only_their_own_directives():
    got = directives(
        app_csp(
            {
                "connectDomains": ["https://api.example.com"],
                "resourceDomains": ["https://*.cdn.example"],
                "frameDomains": ["https://www.youtube.com"],
            }
        )
    )
    assert got["connect-src"] == "https://api.example.com"
    assert "https://*.cdn.example" in got["script-src"] and "https://*.cdn.example" in got["img-src"]
    assert "https://api.example.com" not in got["script-src"]
    assert got["frame-src"] == "https://www.youtube.com"


@pytest.mark.parametrize(
    "source",
    [
        "*",
        "'unsafe-eval'",
        "https://a.example; script-src *",
        "https://a.example/path",
        "javascript:",
        "data:",
        "https://a.example 'unsafe-eval'",
        "http://*",
    ],
)
def test_sources_that_could_widen_the_policy_are_dropped(source):
    got = app_csp({"connectDomains": [source], "resourceDomains": [source], "frameDomains": [source]})
    assert got == app_csp(None)


def test_the_sandbox_host_serves_the_proxy_with_the_apps_csp():
    with client(policy()) as http:
        response = http.get(
            f"/proxy?host=http://127.0.0.1:1&csp={encoded({'connectDomains': ['https://api.example.com']})}",
            headers={"host": "sandbox.localhost:8000"},
        )
    assert response.status_code == 200
    assert "sandbox-proxy-ready" in response.text
    assert directives(response.headers["content-security-policy"])["connect-src"] == "https://api.example.com"


def test_the_sandbox_host_never_reaches_the_app():
    with client(policy()) as http:
        assert http.get("/api/config", headers={"host": "sandbox.localhost:8000"}).status_code == 404
        assert http.post("/api/config", headers={"host": "sandbox.localhost"}).status_code == 404
        assert http.get("/api/config", headers={"host": "127.0.0.1:8000"}).text == "the api"
        assert http.get("/proxy?csp=!!!", headers={"host": "sandbox.localhost"}).status_code == 400


def test_a_configured_sandbox_origin_replaces_the_local_default():
    configured = policy(sandbox_origin="https://Sandbox.Example.com")
    assert configured.origin_for("https", "chat.example.com") == "https://sandbox.example.com"
    assert configured.is_sandbox_request("sandbox.example.com:443")
    assert not configured.is_sandbox_request("sandbox.localhost:8000")
    with pytest.raises(ValueError):
        policy(sandbox_origin="https://sandbox.example.com/path")


def test_the_local_default_is_for_loopback_pages_only():
    local = policy()
    assert local.origin_for("http", "127.0.0.1:8123") == "http://sandbox.localhost:8123"
    assert local.origin_for("http", "localhost:8000") == "http://sandbox.localhost:8000"
    assert local.origin_for("https", "chat.example.com") is None


def test_the_page_may_frame_only_itself_and_the_sandbox():
    assert "frame-src 'self' http://sandbox.localhost:8000;" in page_csp("http://sandbox.localhost:8000")
    assert "frame-src 'self';" in page_csp(None)


PAGE = [("127.0.0.1", 8000)]


@pytest.mark.parametrize(
    "source",
    [
        "http://127.0.0.1:8000",
        "http://localhost:8000",
        "ws://localhost:8000",
        "https://localhost:8000",
        "http://localhost:*",
        "http://sandbox.localhost:8000",
        "http://*.localhost:8000",
        "http://127.0.0.2:8000",
    ],
)
def test_no_source_that_could_reach_a_loopback_page_is_kept(source):
    got = app_csp({"connectDomains": [source], "resourceDomains": [source], "frameDomains": [source]}, PAGE)
    assert got == app_csp(None)


@pytest.mark.parametrize(
    "source",
    [
        "https://chat.example.com",
        "https://*.example.com",
        "wss://chat.example.com",
        "http://chat.example.com",
        "https://chat.example.com:443",
        "https://*.example.com:*",
    ],
)
def test_no_source_that_could_reach_a_public_page_is_kept(source):
    got = app_csp({"connectDomains": [source], "resourceDomains": [source]}, [("chat.example.com", 443)])
    assert got == app_csp(None)


def test_sources_for_other_origins_are_kept():
    kept = ["https://api.example.com:8443", "http://localhost:9000", "https://example.com", "https://*.cdn.example"]
    got = directives(app_csp({"connectDomains": kept}, [("chat.example.com", 443), ("127.0.0.1", 8000)]))
    # "https://example.com" is the parent, which *.example.com would match, but which the page is not
    assert got["connect-src"].split() == kept


def test_the_proxy_drops_the_pages_origins_however_the_page_was_reached():
    declared = {"connectDomains": ["http://localhost:8000", "https://chat.example.com", "https://api.example.com"]}
    with client(policy(public_url="https://chat.example.com", port=8000)) as http:
        for page in ("http://127.0.0.1:8000", "http://[::1]:8000", "bogus"):
            response = http.get(
                f"/proxy?host={page}&csp={encoded(declared)}", headers={"host": "sandbox.localhost:8000"}
            )
            assert directives(response.headers["content-security-policy"])["connect-src"] == "https://api.example.com"


def test_the_proxy_turns_dns_prefetching_off():
    with client(policy()) as http:
        response = http.get("/proxy?host=http://127.0.0.1:8000", headers={"host": "sandbox.localhost:8000"})
    assert response.headers["x-dns-prefetch-control"] == "off"
    assert '<meta http-equiv="x-dns-prefetch-control" content="off">' in response.text
