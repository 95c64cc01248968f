"""The OpenAI-compatible door with the `openai` package as the client: the host runs
its tool loop with the caller's MCP tools and answers in OpenAI's shapes,
streamed and not.  Proxy mode; the client's API key is a personal API token."""

from __future__ import annotations

import httpx
import openai
import pytest

from tests.support.doors import served
from tests.support.harness import double_model, make_settings, toolbox_entry, write_config
from tests.support.llm_double import ErrorReply, TextReply, ToolCall, ToolCallReply

SECRET = "proxy-secret-123"
ALICE = {"X-User-Email": "alice@example.com", "X-Proxy-Secret": SECRET}


@pytest.fixture(scope="module")
def site(tmp_path_factory, llm):
    tmp = tmp_path_factory.mktemp("v1")
    write_config(
        tmp / "defaults",
        servers={"toolbox": toolbox_entry(), "research": toolbox_entry(groups=["research"], approval="never")},
        models=[
            double_model(llm),
            {
                "name": "research-only",
                "model": "openai/x",
                "api_base": llm.base_url,
                "api_key_env": "DOUBLE_KEY",
                "groups": ["research"],
            },
        ],
        default_model="double",
        groups={"*@example.com": ["users"]},
    )
    settings = make_settings(tmp, auth_mode="proxy", proxy_secret=SECRET, llm_max_attempts=1)
    with served(settings) as (base, services):
        token = httpx.post(f"{base}/api/tokens", json={"name": "openai"}, headers=ALICE).json()["token"]
        with openai.OpenAI(base_url=f"{base}/v1", api_key=token, max_retries=0, timeout=30) as client:
            yield client, base, services


@pytest.fixture(autouse=True)
def fresh(llm):
    llm.reset()


def tool_names(request):
    return {t["function"]["name"] for t in request.get("tools") or []}


def test_models_lists_what_the_caller_may_use(site):
    client, _, _ = site
    assert [m.id for m in client.models.list()] == ["double"]  # not research-only: alice is not in research


def test_an_answer_uses_the_callers_tools_on_the_server(site, llm):
    client, base, _ = site
    llm.enqueue(ToolCallReply([ToolCall("toolbox_echo", '{"text": "ping"}')]), TextReply("The echo said ping."))
    completion = client.chat.completions.create(
        model="double",
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "my name is Ada"},
            {"role": "assistant", "content": "Hello Ada."},
            {"role": "user", "content": [{"type": "text", "text": "echo ping"}]},
        ],
    )
    assert completion.object == "chat.completion" and completion.model == "double"
    choice = completion.choices[0]
    assert choice.message.role == "assistant" and choice.message.content == "The echo said ping."
    assert choice.finish_reason == "stop" and completion.usage.total_tokens > 0
    first, second = llm.requests
    assert "toolbox_echo" in tool_names(first) and not any(n.startswith("research_") for n in tool_names(first))
    said = [(m["role"], m["content"]) for m in first["messages"] if m["role"] != "system"]
    assert said == [
        ("user", "Instructions from the API client:\nBe brief."),
        ("user", "my name is Ada"),
        ("assistant", "Hello Ada."),
        ("user", "echo ping"),
    ]
    assert "ping" in next(m for m in second["messages"] if m["role"] == "tool")["content"]
    # nothing of it is stored
    assert httpx.get(f"{base}/api/conversations", headers=ALICE).json()["conversations"] == []


def test_a_streamed_answer_arrives_in_chunks_and_ends_with_done(site, llm):
    client, _, _ = site
    llm.chunk_delay_s = 0.05  # a model's pace: each chunk arrives on its own (a fast stream's read comes as one)
    llm.enqueue(
        ToolCallReply([ToolCall("toolbox_add", '{"a": 2, "b": 3}')]), TextReply("Two plus three is five.", chunks=4)
    )
    stream = client.chat.completions.create(
        model="double",
        messages=[{"role": "user", "content": "add 2 and 3"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Two plus three is five."
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) == 4
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0
    assert "5" in next(m for m in llm.requests[1]["messages"] if m["role"] == "tool")["content"]


def test_a_call_that_needs_approval_does_not_run_and_the_model_is_told_why(site, llm):
    client, _, _ = site
    llm.enqueue(ToolCallReply([ToolCall("toolbox_delete_everything", "{}")]), TextReply("I could not delete."))
    completion = client.chat.completions.create(model="double", messages=[{"role": "user", "content": "delete all"}])
    assert completion.choices[0].message.content == "I could not delete."
    result = next(m for m in llm.requests[1]["messages"] if m["role"] == "tool")["content"]
    assert "needs the user's approval" in result and "deleted" not in result


def test_a_tools_question_is_declined(site, llm):
    client, _, _ = site
    llm.enqueue(ToolCallReply([ToolCall("toolbox_ask_name", "{}")]), TextReply("I could not ask."))
    completion = client.chat.completions.create(model="double", messages=[{"role": "user", "content": "who am I?"}])
    assert completion.choices[0].message.content == "I could not ask."
    assert "no answer (decline)" in next(m for m in llm.requests[1]["messages"] if m["role"] == "tool")["content"]


def test_tools_empty_offers_no_tools(site, llm):
    client, _, _ = site
    llm.enqueue(TextReply("no tools here"))
    completion = client.chat.completions.create(model="double", messages=[{"role": "user", "content": "hi"}], tools=[])
    assert completion.choices[0].message.content == "no tools here"
    assert tool_names(llm.requests[0]) == set()


def test_errors_come_in_openais_shape(site, llm):
    client, base, _ = site
    user = [{"role": "user", "content": "hi"}]
    with pytest.raises(openai.NotFoundError) as missing:
        client.chat.completions.create(model="research-only", messages=user)
    assert "research-only" in missing.value.message and missing.value.body["code"] == "not_found"
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="double", messages=[{"role": "assistant", "content": "last word"}])
    with pytest.raises(openai.BadRequestError) as own_tools:
        client.chat.completions.create(
            model="double", messages=user, tools=[{"type": "function", "function": {"name": "f", "parameters": {}}}]
        )
    assert "tools" in own_tools.value.message
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="double", messages=[])
    llm.enqueue(ErrorReply(400, "the model refused"))
    with pytest.raises(openai.APIStatusError) as failed:
        client.chat.completions.create(model="double", messages=user)
    assert failed.value.status_code == 502 and failed.value.body["code"] == "llm_error"
    with openai.OpenAI(base_url=f"{base}/v1", api_key="sb_0123456789abcdef_wrong", max_retries=0) as stranger:
        with pytest.raises(openai.AuthenticationError) as refused:
            stranger.models.list()
    assert "/api/tokens" in refused.value.message


def test_the_openapi_schema_documents_the_doors_with_their_models(site):
    _, base, _ = site
    schema = httpx.get(f"{base}/openapi.json", headers=ALICE).json()  # signed in, like the routes it describes
    paths, models = schema["paths"], schema["components"]["schemas"]
    for path in (
        "/api/chat",
        "/api/calls/{call_id}/approval",
        "/api/elicitations/{request_id}",
        "/api/conversations/{conversation_id}/cancel",
        "/api/tokens",
        "/api/tokens/{token_id}",
        "/v1/models",
        "/v1/chat/completions",
    ):
        assert path in paths, path
    chat = paths["/api/chat"]["post"]
    assert chat["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/ChatRequest")
    assert "text/event-stream" in chat["responses"]["200"]["content"]
    assert {"content", "model", "tools", "conversation_id"} <= set(models["ChatRequest"]["properties"])
    completions = paths["/v1/chat/completions"]["post"]["responses"]["200"]["content"]
    assert completions["application/json"]["schema"]["$ref"].endswith("/ChatCompletion")
    assert "token" in models["NewTokenInfo"]["properties"] and "token" not in models["TokenInfo"]["properties"]
    docs = httpx.get(f"{base}/docs", headers=ALICE)  # ReDoc, its script served by the app itself
    assert docs.status_code == 200 and "/docs/redoc.js" in docs.text
