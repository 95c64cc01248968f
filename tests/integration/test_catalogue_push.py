"""A server that changes its tool list while pages are open: the registry and the
gateway's index follow, and every open websocket of a user who may use that server
hears `catalogue_changed` (an administrator's of every server), so the page lists the
tools again without a reload."""

from __future__ import annotations

import json
import sys

import pytest

from tests.support.harness import PROJECT_ROOT, make_settings, running_app, until, write_config

GROWING = PROJECT_ROOT / "tests" / "support" / "servers" / "growing.py"
SECRET = "push-secret"


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("push")
    server = {"command": sys.executable, "args": [str(GROWING)], "approval": "never"}
    write_config(
        tmp / "overrides",
        servers={"live": server, "staff": {**server, "groups": ["staff"]}},
        groups={"*@example.com": ["users"]},
    )
    settings = make_settings(tmp, auth_mode="proxy", proxy_secret=SECRET, groups_header="X-User-Groups")
    with running_app(settings) as (client, _):
        yield client


def who(email, groups=""):
    return {"x-user-email": email, "x-proxy-secret": SECRET, "x-user-groups": groups}


def tools(app, headers):
    return {t["name"] for t in app.get("/api/config", headers=headers).json()["tools"]}


def grow(ws, tool):
    """Run `tool` (a server's `grow`) through the demo model; the events up to `catalogue_changed`."""
    ws.send_json({"type": "chat", "content": f"run {tool}"})
    events = until(ws, "message_done")
    assert any(e["type"] == "tool_result" and e["ok"] and e["tool"] == tool for e in events), events
    return [e for e in events if e["type"] == "catalogue_changed"] or until(ws, "catalogue_changed")[-1:]


def test_a_tool_added_at_run_time_reaches_every_open_page_that_may_use_it(app):
    ann, boss, root = who("ann@example.com"), who("boss@example.com", "staff"), who("root@example.com", "admin")
    assert "live_count_words" not in tools(app, ann)
    with (
        app.websocket_connect("/ws", headers=ann) as ann_ws,
        app.websocket_connect("/ws", headers=boss) as boss_ws,
        app.websocket_connect("/ws", headers=root) as root_ws,
    ):
        for ws in (ann_ws, boss_ws, root_ws):
            ws.receive_json()

        assert grow(ann_ws, "live_grow") == [{"type": "catalogue_changed", "server": "live"}]
        # the other page hears it too, without asking
        assert until(boss_ws, "catalogue_changed")[-1] == {"type": "catalogue_changed", "server": "live"}
        assert "live_count_words" in tools(app, ann)
        ann_ws.send_json({"type": "chat", "content": "search count the words of a text", "tool_exposure": "gateway"})
        found = next(e for e in until(ann_ws, "message_done") if e["type"] == "tool_result")
        assert json.loads(found["content"])[0]["name"] == "live_count_words"

        # a server Ann may not use changes: only the pages of its users hear of it
        assert grow(boss_ws, "staff_grow") == [{"type": "catalogue_changed", "server": "staff"}]
        assert grow(boss_ws, "live_grow") == [{"type": "catalogue_changed", "server": "live"}]
        assert until(ann_ws, "catalogue_changed")[-1] == {"type": "catalogue_changed", "server": "live"}
        assert "staff_count_words" in tools(app, boss) and "staff_count_words" not in tools(app, ann)
        # an administrator's page hears of every server (it shows their status)
        heard = [until(root_ws, "catalogue_changed")[-1]["server"] for _ in range(3)]
        assert heard == ["live", "staff", "live"]
