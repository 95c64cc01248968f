"""The HTTP and websocket edge under attack: DNS rebinding (unknown Host),
cross-site websockets and POSTs (foreign Origin), duplicate identity headers.
Through the real app, with Starlette's TestClient and with uvicorn and a real
websocket client (what a browser sees).  docs/security.md lists them."""

from __future__ import annotations

import pytest
from starlette.testclient import WebSocketDenialResponse
from starlette.websockets import WebSocketDisconnect
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect as ws_connect

from switchboard.services import build_services
from switchboard.web.app import create_app
from tests.support.harness import free_port, make_settings, running_app, serve_app, write_config

SECRET = "edge-proxy-secret"
EVIL = "http://rebind.attacker.example"


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("edge")
    write_config(tmp / "defaults", groups={"dev@localhost": ["users", "admin"]})
    settings = make_settings(
        tmp,
        public_url="https://chat.example.com",
        allowed_origins=["https://front.example.org"],
        allowed_hosts=["testserver", "*.corp.example"],
    )
    with running_app(settings) as (test_client, _):
        yield test_client


@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("edge-proxy")
    write_config(tmp / "defaults")
    with running_app(make_settings(tmp, auth_mode="proxy", proxy_secret=SECRET, groups_header="X-User-Groups")) as (
        c,
        _,
    ):
        yield c


# -- DNS rebinding: the Host header ----------------------------------------------------------


def test_a_request_for_an_unknown_host_is_refused_with_a_clear_message(client):
    response = client.get("/api/config", headers={"host": "rebind.attacker.example:8000"})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "bad_request" and "rebind.attacker.example" in error["message"]
    assert "SWITCHBOARD_ALLOWED_HOSTS" in error["action"] and "SWITCHBOARD_PUBLIC_URL" in error["action"]
    assert response.headers["x-content-type-options"] == "nosniff"
    assert client.get("/", headers={"host": "rebind.attacker.example"}).status_code == 400
    assert (
        client.post(
            "/api/files", headers={"host": "evil.example"}, files={"file": ("a.txt", b"x", "text/plain")}
        ).status_code
        == 400
    )


def test_known_hosts_are_served(client):
    for host in (
        "localhost",
        "localhost:8000",
        "127.0.0.1:9999",
        "[::1]:8000",
        "chat.example.com",
        "team.corp.example",
        "testserver",
    ):
        assert client.get("/api/config", headers={"host": host}).status_code == 200, host
    assert client.get("/api/config", headers={"host": "corp.example"}).status_code == 400  # `*.` means subdomains
    assert client.get("/api/config", headers={"host": "chat.example.com.evil.example"}).status_code == 400


def test_liveness_answers_any_host(client):
    assert client.get("/healthz", headers={"host": "10.1.2.3:8000"}).status_code == 200


def test_a_websocket_for_an_unknown_host_is_refused(client):
    with pytest.raises(WebSocketDenialResponse) as info:
        with client.websocket_connect(
            "/ws", headers={"host": "rebind.attacker.example:8000", "origin": "http://rebind.attacker.example:8000"}
        ):
            pass
    assert info.value.status_code == 400
    assert "SWITCHBOARD_ALLOWED_HOSTS" in info.value.json()["error"]["action"]


# -- the websocket Origin ----------------------------------------------------------------------


def session_user(client, **headers):
    with client.websocket_connect("/ws", headers=headers) as ws:
        return ws.receive_json()["user"]


def test_the_websocket_admits_the_configured_origins_not_the_host_header(client):
    assert session_user(client) == "dev@localhost"  # no Origin: not a browser
    assert session_user(client, host="chat.example.com", origin="https://chat.example.com")
    # Behind a proxy that passes its own Host, the public origin still counts.
    assert session_user(client, host="127.0.0.1:8000", origin="https://chat.example.com")
    assert session_user(client, host="127.0.0.1:8000", origin="https://front.example.org")
    assert session_user(client, host="localhost:8000", origin="http://localhost:8000")  # the app's own port
    for origin in (
        EVIL,
        "null",
        "http://chat.example.com.evil.example",
        "http://localhost:9999",
        "https://team.corp.example",
    ):
        with pytest.raises(WebSocketDisconnect) as info:
            with client.websocket_connect("/ws", headers={"host": "localhost:8000", "origin": origin}) as ws:
                ws.receive_json()
        assert info.value.code == 1008, origin


def test_a_browser_sees_close_code_1008_for_a_cross_origin_websocket(tmp_path):
    """uvicorn and a real client: the handshake succeeds, then the close carries 1008 (a
    close before accepting reaches the browser as an HTTP 403 and close code 1006)."""
    write_config(tmp_path / "defaults")
    port = free_port()
    settings = make_settings(tmp_path, port=port)
    services = build_services(settings, environ={})
    with serve_app(create_app(settings, services=services), port) as base:
        url = base.replace("http", "ws") + "/ws"
        with ws_connect(url, origin=f"http://127.0.0.1:{port}", open_timeout=10) as ws:  # type: ignore[arg-type]
            assert '"session"' in ws.recv(timeout=10)
        with pytest.raises(ConnectionClosed) as closed:
            with ws_connect(url, origin=EVIL, open_timeout=10) as ws:  # type: ignore[arg-type]
                ws.recv(timeout=10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
        with pytest.raises(InvalidStatus) as refused:
            ws_connect(url, additional_headers={"Host": "rebind.attacker.example"}, open_timeout=10)
        assert refused.value.response.status_code == 400


def test_a_client_without_identity_sees_close_code_1008(tmp_path):
    write_config(tmp_path / "defaults")
    port = free_port()
    settings = make_settings(tmp_path, port=port, auth_mode="proxy", proxy_secret=SECRET)
    services = build_services(settings, environ={})
    with serve_app(create_app(settings, services=services), port) as base:
        url = base.replace("http", "ws") + "/ws"
        with pytest.raises(ConnectionClosed) as closed:
            with ws_connect(url, additional_headers={"X-User-Email": "bob@example.com"}, open_timeout=10) as ws:
                ws.recv(timeout=10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
        with ws_connect(
            url, additional_headers={"X-User-Email": "bob@example.com", "X-Proxy-Secret": SECRET}, open_timeout=10
        ) as ws:
            assert '"bob@example.com"' in ws.recv(timeout=10)


# -- cross-site state changes ----------------------------------------------------------------


def test_a_cross_site_post_is_refused_before_the_route_runs(client):
    files = {"file": ("notes.txt", b"cross-site", "text/plain")}
    response = client.post("/api/files", headers={"origin": EVIL}, files=files)
    assert response.status_code == 403
    error = response.json()["error"]
    assert (
        error["code"] == "forbidden" and EVIL in error["message"] and "SWITCHBOARD_ALLOWED_ORIGINS" in error["action"]
    )
    assert client.post("/api/admin/reload", headers={"origin": EVIL}).status_code == 403
    assert client.post("/api/admin/reload", headers={"origin": "null"}).status_code == 403  # sandboxed artifact
    assert client.post("/api/admin/reload", headers={"sec-fetch-site": "cross-site"}).status_code == 403
    # Every state-changing method, on any route, present or future.
    for method in ("PUT", "PATCH", "DELETE"):
        assert client.request(method, "/api/some/future/route", headers={"origin": EVIL}).status_code == 403


def test_same_origin_and_origin_less_posts_still_work(client):
    files = {"file": ("notes.txt", b"fine", "text/plain")}
    assert client.post("/api/files", files=files).status_code == 200  # API clients send no Origin
    assert (
        client.post(
            "/api/files",
            headers={"host": "localhost:8000", "origin": "http://localhost:8000", "sec-fetch-site": "same-origin"},
            files=files,
        ).status_code
        == 200
    )
    assert client.post("/api/files", headers={"origin": "https://chat.example.com"}, files=files).status_code == 200
    assert client.post("/api/admin/reload", headers={"origin": "https://front.example.org"}).status_code == 200
    assert client.get("/api/config", headers={"origin": EVIL}).status_code == 200  # reads are the browser's to guard


# -- duplicate identity headers ----------------------------------------------------------------


class HeaderList(list):
    """Repeated headers for TestClient: a mapping would fold them into one comma-joined value."""

    def setdefault(self, name: str, value: str) -> str:  # websocket_connect adds its handshake headers so
        self.append((name, value))
        return value


def proxy_headers(*extra: tuple[str, str]) -> HeaderList:
    return HeaderList([("x-user-email", "bob@example.com"), ("x-proxy-secret", SECRET), *extra])


@pytest.mark.parametrize(
    "extra", [("x-user-email", "root@example.com"), ("x-proxy-secret", SECRET), ("x-user-groups", "admin")]
)
def test_a_repeated_identity_secret_or_groups_header_is_refused(proxy, extra):
    assert proxy.get("/api/config", headers=proxy_headers()).json()["user"]["email"] == "bob@example.com"
    if extra[0] == "x-user-groups":
        assert proxy.get("/api/config", headers=proxy_headers(("x-user-groups", "users"))).status_code == 200
        headers = proxy_headers(("x-user-groups", "users"), extra)
    else:
        headers = proxy_headers(extra)
    response = proxy.get("/api/config", headers=headers)
    assert response.status_code == 401
    assert "more than once" in response.json()["error"]["message"]
    with pytest.raises(WebSocketDisconnect) as info:
        with proxy.websocket_connect("/ws", headers=headers) as ws:
            ws.receive_json()
    assert info.value.code == 1008


def test_two_identities_folded_into_one_header_are_refused(proxy):
    headers = {"x-user-email": "bob@example.com, root@example.com", "x-proxy-secret": SECRET}
    assert proxy.get("/api/config", headers=headers).status_code == 401
