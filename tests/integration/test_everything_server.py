"""The reference server `@modelcontextprotocol/server-everything` (npm) through
the host: its long-running tool's progress, image content, structured
content, resource links and embedded resources (artifacts), elicitation and
sampling, over the real websocket with the HTTP LLM double as the model.

Needs `npx` and the npm registry (the first download takes ~15 s).  Skipped
without npx; under CI=true a server that does not start is a failure, not a
skip.  Tool names differ between versions: the test lists them first."""

from __future__ import annotations

import json
import os
import shutil
import time

import pytest

from tests.support.harness import double_model, make_settings, running_app, until, write_config
from tests.support.llm_double import LLMDouble, TextReply, ToolCall, ToolCallReply

pytestmark = [
    pytest.mark.timeout(240),  # the first test waits for the npm download
]

IN_CI = os.environ.get("CI", "").lower() == "true"
START_TIMEOUT_S = 180


@pytest.fixture(scope="module")
def double():
    with LLMDouble() as running:
        yield running


@pytest.fixture
def llm(double):
    double.reset()
    yield double
    double.reset()


@pytest.fixture(scope="module")
def site(tmp_path_factory, double):
    if shutil.which("npx") is None:
        pytest.skip("npx is not installed")
    tmp = tmp_path_factory.mktemp("everything")
    entry = json.loads((_examples() / "everything.json").read_text())["servers"]["everything"]
    entry.update(
        # stdio children get a minimal environment: npx needs PATH and HOME
        env={"PATH": "${PATH}", "HOME": "${HOME}", "npm_config_prefer_offline": "true"},
        approval="never",
        sampling="allow",
        timeout_s=30,
    )
    write_config(tmp / "defaults", servers={"everything": entry}, models=[double_model(double)], default_model="double")
    settings = make_settings(tmp, server_start_timeout_s=START_TIMEOUT_S)
    environ = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", str(tmp))}
    with running_app(settings, environ) as (client, services):
        deadline = time.monotonic() + START_TIMEOUT_S
        status = services.pool.connections["everything"].status
        while status.status == "starting" and time.monotonic() < deadline:
            time.sleep(0.2)
            status = services.pool.connections["everything"].status
        if status.status != "ready":
            why = f"server-everything did not start: {status.status} {status.reason} {status.stderr_tail}"
            if IN_CI:
                pytest.fail(why)
            pytest.skip(why)
        yield client, services


def _examples():
    from switchboard.settings import PROJECT_ROOT

    return PROJECT_ROOT / "config" / "examples"


def tool_names(services) -> set[str]:
    return {t.name for t in services.pool.registry.all() if t.server == "everything"}


def need(services, *names: str) -> None:
    missing = [n for n in names if n not in tool_names(services)]
    if missing:
        pytest.skip(f"this server-everything version has no {missing} (it has {sorted(tool_names(services))})")


def qualified(services, name: str) -> str:
    return next(t.qualified_name for t in services.pool.registry.all() if t.server == "everything" and t.name == name)


def turn(client, llm, services, calls: list[tuple[str, dict]], answer: str = "Done."):
    """One chat turn in which the model calls `calls`; returns the events and the tool results by tool name."""
    llm.enqueue(ToolCallReply([ToolCall(qualified(services, n), json.dumps(a)) for n, a in calls]), TextReply(answer))
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        ws.send_json({"type": "chat", "content": "use the everything server"})
        events = until(ws, "message_done")
    return events, {e["tool"].removeprefix("everything_"): e for e in events if e["type"] == "tool_result"}


def test_the_server_starts_and_its_tools_are_offered(site):
    client, services = site
    names = tool_names(services)
    print("server-everything tools:", sorted(names))
    assert {"echo", "get-tiny-image"} <= names
    config = client.get("/api/config").json()
    server = next(s for s in config["servers"] if s["name"] == "everything")
    assert server["status"] == "ready" and len(server["tools"]) == len(names)
    assert client.get("/readyz").status_code == 200


def test_progress_of_the_long_running_operation_reaches_the_browser(site, llm):
    client, services = site
    need(services, "trigger-long-running-operation")
    events, results = turn(client, llm, services, [("trigger-long-running-operation", {"duration": 2, "steps": 4})])
    progress = [e for e in events if e["type"] == "tool_progress"]
    assert [p["progress"] for p in progress] == [1, 2, 3, 4] and progress[-1]["total"] == 4
    assert results["trigger-long-running-operation"]["ok"], results
    assert "completed" in results["trigger-long-running-operation"]["content"]


def test_images_structured_content_and_resources_become_results_and_artifacts(site, llm):
    client, services = site
    need(services, "get-tiny-image", "get-structured-content", "get-resource-links", "get-resource-reference")
    events, results = turn(
        client,
        llm,
        services,
        [
            ("get-tiny-image", {}),
            ("get-structured-content", {"location": "Chicago"}),
            ("get-resource-links", {"count": 2}),
            ("get-resource-reference", {"resourceType": "Text", "resourceId": 1}),
        ],
    )
    assert all(r["ok"] for r in results.values()), results
    image = results["get-tiny-image"]["artifacts"]
    assert len(image) == 1 and image[0]["mime"] == "image/png"
    assert client.get(image[0]["url"]).content.startswith(b"\x89PNG")

    structured = results["get-structured-content"]["results"]
    assert isinstance(structured, dict) and "temperature" in structured

    linked = results["get-resource-links"]["artifacts"]
    assert len(linked) == 2  # fetched through the server (resources/read), not by URL
    assert all(client.get(a["url"]).status_code == 200 and a["size"] > 0 for a in linked)

    embedded = results["get-resource-reference"]["artifacts"]
    assert len(embedded) == 1 and client.get(embedded[0]["url"]).content

    # The model is told which files were produced, never their bytes.
    to_model = " ".join(m["content"] for m in llm.requests[-1]["messages"] if m["role"] == "tool")
    assert "files produced and shown to the user" in to_model and "iVBORw0KGgo" not in to_model


def test_elicitation_asks_the_user_through_the_browser(site, llm):
    client, services = site
    need(services, "trigger-elicitation-request")
    llm.enqueue(
        ToolCallReply([ToolCall(qualified(services, "trigger-elicitation-request"), "{}")]), TextReply("Thanks.")
    )
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        ws.send_json({"type": "chat", "content": "ask me something"})
        question = until(ws, "elicitation_request")[-1]
        assert "name" in question["schema"]["properties"]
        answer = {"name": "Lin Example", "check": True, "email": "lin@example.com"}
        ws.send_json(
            {
                "type": "elicitation_response",
                "request_id": question["request_id"],
                "action": "accept",
                "content": answer,
            }
        )
        events = until(ws, "message_done")
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["ok"] and "Lin Example" in result["content"], result


def test_sampling_uses_the_conversations_model(site, llm):
    client, services = site
    need(services, "trigger-sampling-request")
    llm.enqueue(
        ToolCallReply(
            [ToolCall(qualified(services, "trigger-sampling-request"), '{"prompt": "say hi", "maxTokens": 20}')]
        ),
        TextReply("a sampled greeting"),  # the server's sampling request
        TextReply("The server got its completion."),
    )
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        ws.send_json({"type": "chat", "content": "let the server ask the model"})
        events = until(ws, "message_done")
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["ok"] and "a sampled greeting" in result["content"], result
    assert any(e["type"] == "tool_log" and "completion" in e["message"] for e in events)
    sampling_request = llm.requests[1]
    assert "say hi" in json.dumps(sampling_request["messages"]) and not sampling_request.get("tools")


def test_tools_the_host_cannot_call_are_not_offered(site):
    client, services = site
    listed = services.pool.connections["everything"].tools  # everything the server listed
    task_only = {t.name for t in listed if t.execution is not None and t.execution.task_support == "required"}
    if not task_only:
        pytest.skip("this server-everything version has no task-only tools")
    offered = {t["tool"] for t in client.get("/api/config").json()["tools"] if t["server"] == "everything"}
    assert not task_only & offered, f"offered, but callable only as MCP tasks: {sorted(task_only & offered)}"
