"""Local models and the default model, as a new user meets them: the local-model example of
docs/models.md works as written without a key (against the HTTP LLM double); a model that
fails is never quietly the default of the page, `switchboard chat` and `/api/chat`; the
overrides file's `default_model` is honoured even for the demo model; `/v1` says which
variable a model lacks."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from switchboard.settings import PROJECT_ROOT
from tests.support.harness import free_port, make_settings, running_app, write_config
from tests.support.llm_double import TextReply

DEMO = {"name": "demo", "model": "switchboard/demo"}
LEAKABLE = "sk-operators-openai-key-0123456789"


def docs_example() -> dict:
    """The YAML block of docs/models.md's "Local models" section, as written there."""
    text = (PROJECT_ROOT / "docs" / "models.md").read_text()
    section = text.split("## Local models", 1)[1]
    return yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, re.S).group(1))


def chat(client, body: dict) -> list[dict]:
    with client.stream("POST", "/api/chat", json=body) as answer:
        assert answer.status_code == 200, answer.read()
        return [json.loads(line[5:]) for line in answer.iter_lines() if line.startswith("data:")]


async def probed(services) -> None:
    """Until the start-up probe of local models has run."""
    await services.life._model_probe


@pytest.fixture(autouse=True)
def fresh(llm):
    llm.reset()


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "litellm"])
def test_the_docs_local_model_example_answers_without_a_key(tmp_path, llm, monkeypatch, direct):
    monkeypatch.setenv("OPENAI_API_KEY", LEAKABLE)  # the operator's OpenAI key must not go to a local server
    example = docs_example()
    (local,) = example["models"]
    assert "api_key_env" not in local and local["api_base"].startswith("http://localhost")
    local["api_base"] = llm.base_url
    write_config(tmp_path / "defaults", models=[DEMO], default_model="demo")
    (tmp_path / "overrides").mkdir()
    (tmp_path / "overrides" / "llmconfig.yml").write_text(yaml.safe_dump(example))
    llm.enqueue(TextReply("Hello from the local model"))
    with running_app(make_settings(tmp_path, llm_direct=direct, llm_max_attempts=1)) as (client, _):
        config = client.get("/api/config").json()
        assert config["default_model"] == local["name"]
        events = chat(client, {"content": "hi"})  # no model named: the default, as for the page and the CLI
    assert [e for e in events if e["type"] == "error"] == []
    assert "Hello from the local model" in "".join(e["text"] for e in events if e["type"] == "token")
    assert llm.requests[0]["model"] == local["model"].removeprefix("openai/")
    assert LEAKABLE not in json.dumps(llm.request_headers)


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "litellm"])
def test_a_local_model_whose_server_is_down_is_never_the_default(tmp_path, llm, direct):
    down = f"http://127.0.0.1:{free_port()}/v1"  # bound and closed: nothing listens there
    write_config(
        tmp_path / "defaults",
        models=[
            DEMO,
            {"name": "local", "model": "openai/llama3.1", "api_base": down},
            {"name": "later", "model": "openai/llama3.1", "api_base": llm.base_url},
        ],
        default_model="local",
    )
    refused = f"nothing answers at {down} (connection refused)"
    settings = make_settings(tmp_path, llm_max_attempts=2, llm_direct=direct)
    with running_app(settings) as (client, services):
        client.portal.call(probed, services)
        config = client.get("/api/config").json()
        models = {m["name"]: m for m in config["models"]}
        assert config["default_model"] == "later", config
        assert models["local"]["failing"] == refused and models["later"]["failing"] is None
        assert (
            config["default_note"]
            == f"The default model 'local' is not working ({refused}); 'later' is used until it works."
        )
        # Picked by name it is still tried, and says why it fails; a working call clears the mark.
        events = chat(client, {"content": "hi", "model": "local"})
        (error,) = [e for e in events if e["type"] == "error"]
        assert error["message"] == f"Model 'local': {refused} (tried 2 times)", error
        assert "HTTP 500" not in json.dumps(events) and "InternalServerError" not in json.dumps(events)
        notice = next(e for e in events if e["type"] == "notice")
        assert notice["message"].startswith(f"Model 'local': {refused}; trying again in"), notice
        llm.enqueue(TextReply("fine"))
        assert any(e["type"] == "token" for e in chat(client, {"content": "hi"}))


def test_a_model_that_failed_in_a_call_stops_being_the_default(tmp_path, llm):
    from tests.support.llm_double import ErrorReply

    write_config(
        tmp_path / "defaults",
        models=[DEMO, {"name": "local", "model": "openai/llama3.1", "api_base": llm.base_url}],
        default_model="demo",
    )
    with running_app(make_settings(tmp_path, llm_max_attempts=1)) as (client, _):
        assert client.get("/api/config").json()["default_model"] == "local"
        llm.enqueue(ErrorReply(404, "model 'llama3.1' not found"))
        events = chat(client, {"content": "hi"})
        assert any(e["type"] == "error" for e in events)
        config = client.get("/api/config").json()
        assert config["default_model"] == "demo"
        assert "llama3.1" in {m["name"]: m for m in config["models"]}["local"]["failing"]
        llm.enqueue(TextReply("back"))
        chat(client, {"content": "hi", "model": "local"})
        assert client.get("/api/config").json()["default_model"] == "local"


def test_default_model_in_the_overrides_file_is_honoured_even_for_the_demo_model(tmp_path, llm):
    write_config(
        tmp_path / "defaults",
        models=[DEMO, {"name": "local", "model": "openai/llama3.1", "api_base": llm.base_url}],
        default_model="demo",
    )
    with running_app(make_settings(tmp_path)) as (client, _):
        assert client.get("/api/config").json()["default_model"] == "local", "the shipped default gives way"
    (tmp_path / "overrides").mkdir()
    (tmp_path / "overrides" / "llmconfig.yml").write_text("default_model: demo\n")
    with running_app(make_settings(tmp_path)) as (client, _):
        assert client.get("/api/config").json()["default_model"] == "demo"
        events = chat(client, {"content": "what can you do"})
    assert llm.requests == [], "the demo model answered, not the local one"
    assert any(e["type"] == "message_done" for e in events)


def test_v1_names_the_missing_key_of_a_model_that_exists(tmp_path, llm):
    write_config(
        tmp_path / "defaults",
        models=[DEMO, {"name": "gpt", "model": "openai/gpt-4o-mini", "api_key_env": "SOME_PROVIDER_KEY"}],
    )
    with running_app(make_settings(tmp_path)) as (client, _):
        answer = client.post(
            "/v1/chat/completions", json={"model": "gpt", "messages": [{"role": "user", "content": "hi"}]}
        )
        nosuch = client.post(
            "/v1/chat/completions", json={"model": "nosuch", "messages": [{"role": "user", "content": "hi"}]}
        )
    assert answer.status_code == 404
    message = answer.json()["error"]["message"]
    assert "SOME_PROVIDER_KEY is not set" in message and "no model named" not in message
    assert "no model named 'nosuch'" in nosuch.json()["error"]["message"]
