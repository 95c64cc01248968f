"""The audit log through the real app: a user's first request, their allowed and denied tool
calls (arguments kept as a hash), an administrator's reload, each one record; only
administrators read them (filters, a cursor, a download, the key); the app's stop signs a
checkpoint, and `switchboard audit verify|export|key` read the same log."""

from __future__ import annotations

import hashlib
import json

import pytest
import rfc8785

from switchboard.__main__ import main
from tests.support.harness import double_model, make_settings, running_app, toolbox_entry, until, write_config
from tests.support.llm_double import TextReply, ToolCall, ToolCallReply

pytestmark = pytest.mark.timeout(240)  # a server started, restarted and stopped, on a shared machine
SECRET = "audit-secret"
ANN = {"x-user-email": "ann@example.com", "x-proxy-secret": SECRET}
ROOT = {"x-user-email": "root@example.com", "x-proxy-secret": SECRET}


def _turn(client, llm, tool: str, arguments: dict, approve: bool) -> None:
    llm.enqueue(ToolCallReply([ToolCall(tool, json.dumps(arguments))]), TextReply("ok"))
    with client.websocket_connect("/ws", headers=ANN) as ws:
        ws.receive_json()
        ws.send_json({"type": "chat", "content": f"use {tool}"})
        asked = until(ws, "approval_request")[-1]
        ws.send_json({"type": "approval_response", "call_id": asked["call_id"], "approved": approve})
        until(ws, "message_done")


@pytest.fixture
def site(tmp_path, llm):
    write_config(
        tmp_path / "defaults",
        servers={"toolbox": toolbox_entry(approval="always")},
        models=[double_model(llm)],
        default_model="double",
        groups={"*@example.com": ["users"], "root@example.com": ["users", "admin"]},
    )
    return tmp_path, make_settings(tmp_path, auth_mode="proxy", proxy_secret=SECRET)


def test_tool_calls_and_admin_actions_are_recorded_and_only_admins_read_them(site, llm, monkeypatch, capsys):
    tmp, settings = site
    with running_app(settings) as (client, services):
        _turn(client, llm, "toolbox_echo", {"text": "a private sentence"}, approve=False)
        _turn(client, llm, "toolbox_add", {"a": 1, "b": 2}, approve=True)
        assert client.post("/api/admin/reload", headers=ROOT).status_code == 200
        client.portal.call(services.pool.wait_settled, 60)
        assert client.post("/api/servers/toolbox/restart", headers=ROOT).status_code == 200

        for path in ("/api/admin/audit", "/api/admin/audit/key", "/api/admin/audit/export"):
            assert client.get(path, headers=ANN).status_code == 403, path

        denied = client.get("/api/admin/audit?user=ann@example.com&decision=deny", headers=ROOT).json()["records"]
        assert [(r["kind"], r["tool"], r["server"]) for r in denied] == [("tool_call", "toolbox_echo", "toolbox")]
        record = denied[0]
        digest = hashlib.sha256(rfc8785.dumps({"text": "a private sentence"})).hexdigest()
        assert record["arguments_sha256"] == digest and "a private sentence" not in json.dumps(record)
        assert record["hooks"] == [] and record["outcome"] == {"ok": False} and "denied" in record["reason"]
        assert record["pin"] and record["conversation_id"] and len(record["hash"]) == 64

        [allowed] = client.get("/api/admin/audit?tool=toolbox_add", headers=ROOT).json()["records"]
        assert allowed["decision"] == "allow" and allowed["outcome"] == {"ok": True}
        assert allowed["approval"] == {"answer": "approve", "edited": False, "by": "ann@example.com"}
        assert allowed["duration_ms"] >= 0 and allowed["seq"] > record["seq"]

        everything = client.get("/api/admin/audit?limit=1000", headers=ROOT).json()["records"]
        kinds = [r["kind"] for r in reversed(everything)]  # newest first
        assert kinds.count("user_seen") == 2 and {"admin_action", "config_reload"} <= set(kinds)
        assert [r["seq"] for r in everything] == sorted((r["seq"] for r in everything), reverse=True)
        admin = [(r["action"], r["user"], r.get("server")) for r in everything if r["kind"] == "admin_action"]
        assert admin == [("restart", "root@example.com", "toolbox"), ("reload", "root@example.com", None)]

        first = client.get("/api/admin/audit?limit=2", headers=ROOT).json()
        second = client.get(f"/api/admin/audit?limit=2&cursor={first['next_cursor']}", headers=ROOT).json()
        assert [r["seq"] for r in first["records"] + second["records"]] == [r["seq"] for r in everything[:4]]
        services.audit.record("made_for_the_test", user="nobody@example.com")  # the one entry point for new kinds
        [made] = client.get("/api/admin/audit?kind=made_for_the_test", headers=ROOT).json()["records"]
        assert made["user"] == "nobody@example.com" and made["seq"] > everything[0]["seq"]

        download = client.get("/api/admin/audit/export?decision=deny&user=ann@example.com", headers=ROOT)
        assert download.status_code == 200 and "attachment" in download.headers["content-disposition"]
        assert [json.loads(line)["seq"] for line in download.text.splitlines()] == [record["seq"]]
        ocsf = client.get("/api/admin/audit/export?format=ocsf&tool=toolbox_add", headers=ROOT).text.splitlines()
        event = json.loads(ocsf[0])
        assert event["class_uid"] == 6003 and event["type_uid"] == 600399 and event["actor"]["user"]["email_addr"]
        assert client.get("/api/admin/audit?since=yesterday", headers=ROOT).status_code == 400

        key = client.get("/api/admin/audit/key", headers=ROOT).json()
        assert key == {"algorithm": "Ed25519", "public_key": services.audit.public_key}
        last = made["seq"]

    # The app has stopped: a checkpoint vouches for the whole chain, and the commands read it.
    monkeypatch.setenv("SWITCHBOARD_DATA_DIR", str(tmp / "data"))
    capsys.readouterr()
    assert main(["audit", "key"]) == 0
    assert capsys.readouterr().out.strip() == key["public_key"]
    assert main(["audit", "verify"]) == 0
    assert f"through seq {last}" in capsys.readouterr().out
    assert main(["audit", "export", "--format", "jsonl"]) == 0
    exported = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["seq"] for r in exported] == list(range(1, last + 1))
    assert main(["audit", "export", "--since", "2999-01-01"]) == 0 and capsys.readouterr().out == ""


def test_verify_exits_1_naming_the_first_bad_seq(site, llm, monkeypatch, capsys):
    import sqlite3

    tmp, settings = site
    with running_app(settings) as (client, _):
        for who in ("a", "b", "c", "d"):
            assert client.get("/api/config", headers={**ANN, "x-user-email": f"{who}@example.com"}).status_code == 200
    monkeypatch.setenv("SWITCHBOARD_DATA_DIR", str(tmp / "data"))
    assert main(["audit", "verify"]) == 0
    db = sqlite3.connect(tmp / "data" / "switchboard.db")
    db.execute("DROP TRIGGER audit_records_no_update")  # as someone with the file would
    db.execute("UPDATE audit_records SET body = replace(body, 'b@example', 'z@example') WHERE user = 'b@example.com'")
    db.commit()
    [(seq,)] = db.execute("SELECT seq FROM audit_records WHERE user = 'b@example.com'").fetchall()
    db.close()
    capsys.readouterr()
    assert main(["audit", "verify"]) == 1
    assert f"broken at seq {seq}" in capsys.readouterr().err
    assert main(["audit", "verify", "--from", str(seq + 1)]) == 0
