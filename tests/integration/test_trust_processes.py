"""An administrator's approval on one app process reaches the other (two processes on one
PostgreSQL): its pages hear `catalogue_changed` at once and its model is offered the tool."""

from __future__ import annotations

import json
import time

import httpx
import pytest
from websockets.sync.client import connect

from tests.support.cluster import running_cluster
from tests.support.harness import toolbox_entry, write_config

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, postgres_cluster):
    folder = tmp_path_factory.mktemp("trust-cluster")
    write_config(
        folder / "defaults",
        servers={"toolbox": toolbox_entry(trust="review")},
        groups={"dev@localhost": ["users", "admin"]},
    )
    with running_cluster(folder, postgres_cluster.create_database(), replicas=2) as running:
        yield running


def _http(cluster, index: int) -> str:
    return f"http://127.0.0.1:{cluster.ports[index]}"


def _trust(cluster, index: int, name: str) -> str:
    tools = httpx.get(f"{_http(cluster, index)}/api/config", timeout=30).json()["tools"]
    return next(t["trust"] for t in tools if t["name"] == name)


def test_an_approval_on_one_process_reaches_the_pages_of_another(cluster):
    assert _trust(cluster, 0, "toolbox_echo") == _trust(cluster, 1, "toolbox_echo") == "pending"
    listed = httpx.get(f"{_http(cluster, 0)}/api/admin/tools?state=pending", timeout=30).json()["tools"]
    echo = next(t for t in listed if t["name"] == "toolbox_echo")
    with connect(f"ws://127.0.0.1:{cluster.ports[1]}/ws", open_timeout=30) as page:
        assert json.loads(page.recv(timeout=30))["type"] == "session"
        answer = httpx.post(
            f"{_http(cluster, 0)}/api/admin/tools/toolbox_echo/approve", json={"pin": echo["pin"]}, timeout=30
        )
        assert answer.status_code == 200, answer.text
        deadline = time.monotonic() + 10
        while True:
            event = json.loads(page.recv(timeout=max(0.1, deadline - time.monotonic())))
            if event["type"] == "catalogue_changed":
                break
        assert event.get("server") == "toolbox"
    assert _trust(cluster, 1, "toolbox_echo") == "approved"
    assert _trust(cluster, 1, "toolbox_add") == "pending"  # only what was approved
    # The other process refuses a stale pin too (it reads the decision from the database).
    stale = httpx.post(
        f"{_http(cluster, 1)}/api/admin/tools/toolbox_add/approve", json={"pin": echo["pin"]}, timeout=30
    )
    assert stale.status_code == 409
