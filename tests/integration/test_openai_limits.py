"""The OpenAI-compatible door under attack: bodies are capped, a request is checked whole
before anything is kept (400, never 500), its turn runs at the compliance level asked for,
and its files do not outlive it. Proxy mode, the app served by uvicorn."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.support.doors import served
from tests.support.harness import double_model, make_settings, toolbox_entry, write_config
from tests.support.llm_double import TextReply, ToolCall, ToolCallReply

SECRET = "proxy-secret-123"
ALICE = {"X-User-Email": "alice@example.com", "X-Proxy-Secret": SECRET}
LEVEL = "X-Switchboard-Compliance-Level"
MAX_BODY = 1024 * 1024


@pytest.fixture(scope="module")
def site(tmp_path_factory, llm):
    tmp = tmp_path_factory.mktemp("v1-limits")
    external = {**double_model(llm), "name": "external", "compliance_level": "External"}
    write_config(
        tmp / "defaults",
        servers={
            "inside": toolbox_entry(approval="never", compliance_level="Internal"),
            "outside": toolbox_entry(approval="never", compliance_level="Public"),
        },
        models=[double_model(llm), external],
        default_model="double",
        groups={"*@example.com": ["users"]},
    )
    settings = make_settings(
        tmp, auth_mode="proxy", proxy_secret=SECRET, llm_max_attempts=1, max_request_bytes=MAX_BODY
    )
    with served(settings) as (base, services):
        with httpx.Client(base_url=base, timeout=30) as client:
            token = client.post("/api/tokens", json={"name": "v1"}, headers=ALICE).json()["token"]
            client.headers["Authorization"] = f"Bearer {token}"
            yield client, services


@pytest.fixture(autouse=True)
def fresh(llm):
    llm.reset()


def ask(client, content="hi", headers=None, **extra):
    return client.post(
        "/v1/chat/completions",
        json={"model": "double", "messages": [{"role": "user", "content": content}], **extra},
        headers=headers,
    )


def offered(request) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools") or []}


def test_a_body_over_the_cap_is_refused_before_it_is_read(site, llm):
    client, _ = site
    big = "x" * (MAX_BODY + 10)
    declared = ask(client, big)
    assert declared.status_code == 413 and declared.json()["error"]["type"] == "invalid_request_error"
    assert "larger than 1 MB" in declared.json()["error"]["message"]

    def chunks():
        yield b'{"model": "double", "messages": [{"role": "user", "content": "'
        for _ in range(20):
            yield b"x" * 100_000
        yield b'"}]}'

    chunked = client.post("/v1/chat/completions", content=chunks(), headers={"Content-Type": "application/json"})
    assert chunked.status_code == 413
    page_door = client.post("/api/chat", json={"content": big})
    assert page_door.status_code == 413 and page_door.json()["error"]["code"] == "bad_request"
    assert llm.requests == []


def test_a_question_over_the_message_limit_is_a_clear_400_and_nothing_is_kept(site, llm):
    client, services = site
    for messages in (
        [{"role": "user", "content": "y" * 200_001}],
        [
            {"role": "user", "content": "z" * 200_001},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "short"},
        ],
    ):
        refused = client.post("/v1/chat/completions", json={"model": "double", "messages": messages})
        assert refused.status_code == 400, refused.text
        assert "200,000" in refused.json()["error"]["message"] and refused.json()["error"]["code"] == "bad_request"
    assert llm.requests == [] and services.turns.tasks() == []
    assert services.conversations._memory.count("alice@example.com") == 0


def test_the_turn_runs_at_the_level_asked_for_with_only_its_tools(site, llm):
    client, _ = site
    llm.enqueue(TextReply("anything"), TextReply("outside only"), TextReply("by header"))
    assert ask(client).status_code == 200
    assert {"inside_echo", "outside_echo"} <= offered(llm.requests[-1])  # no level: every tool
    at_public = ask(client, compliance_level="Public")
    assert at_public.json()["choices"][0]["message"]["content"] == "outside only"
    tools = offered(llm.requests[-1])
    assert "outside_echo" in tools and not any(t.startswith("inside_") for t in tools)
    by_header = ask(client, headers={LEVEL: "External"})
    assert by_header.status_code == 200 and not any(t.startswith("inside_") for t in offered(llm.requests[-1]))


def test_a_model_or_level_the_request_may_not_use_is_refused(site, llm):
    client, _ = site
    unknown = ask(client, compliance_level="Secret")
    assert unknown.status_code == 400 and "unknown compliance level 'Secret'" in unknown.json()["error"]["message"]
    assert "Public, Internal, External" in unknown.json()["error"]["message"]
    assert ask(client, headers={LEVEL: "Nope"}).status_code == 400
    wrong = client.post(
        "/v1/chat/completions",
        json={"model": "external", "compliance_level": "Internal", "messages": [{"role": "user", "content": "hi"}]},
    )
    assert wrong.status_code == 404 and "compliance level Internal" in wrong.json()["error"]["message"]
    models = {m["id"] for m in client.get("/v1/models", headers={LEVEL: "Internal"}).json()["data"]}
    assert models == {"double"} and {m["id"] for m in client.get("/v1/models").json()["data"]} == {"double", "external"}
    assert llm.requests == []


def test_a_requests_artifacts_are_deleted_when_its_turn_ends(site, llm):
    client, services = site
    files = services.settings.data_dir / "files"
    before = {p.name for p in files.glob("*.json")}
    llm.enqueue(ToolCallReply([ToolCall("outside_make_report", "{}")]), TextReply("made a report"))
    answer = ask(client, "make a report")
    assert answer.json()["choices"][0]["message"]["content"] == "made a report"
    assert "2 files" in next(m for m in llm.requests[1]["messages"] if m["role"] == "tool")["content"]
    deadline = time.monotonic() + 10
    while {p.name for p in files.glob("*.json")} - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert {p.name for p in files.glob("*.json")} - before == set()
