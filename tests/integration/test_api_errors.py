"""No request of any shape reaches a server error, and an unhandled one is recorded
(issue 38): signed-link parameters are data, the app's error model answers everywhere."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from switchboard.services import build_services
from switchboard.web.app import create_app
from tests.support.harness import make_settings, write_config


@pytest.fixture(scope="module")
def dev_app(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("api-errors")
    write_config(tmp / "defaults", servers={})
    settings = make_settings(tmp)
    services = build_services(settings, environ={})
    with TestClient(create_app(settings, services=services), raise_server_exceptions=False) as client:
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
