"""Switchboard as the "client" of the MCP conformance suite's client scenarios.

The suite starts a test server per scenario and runs `python switchboard_client.py
<server url>`.  This starts the real app in-process with that server in `mcp.json`
(`auth` as the scenario needs), signs a user in the way a browser would (the
app's `GET /api/servers/{name}/connect`, the authorization server's redirect,
the app's `GET /oauth/callback`), then lists the server's tools and calls them
on that user's session through the host's server pool, as a chat turn does.

Scenario data (pre-registered clients) comes in MCP_CONFORMANCE_CONTEXT.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, for tests.support

from switchboard.chat import ConversationState, TurnState
from switchboard.errors import NeedsAuth, SwitchboardError
from switchboard.identity.users import User
from tests.support.harness import make_settings, running_app, write_config

CIMD_URL = "https://conformance-test.local/client-metadata.json"  # the URL the suite's CIMD scenario expects
SERVER = "conformance"
USER_EMAIL = "dev@localhost"  # dev auth mode: the one local user; its servers on localhost may sign in there
ARGUMENTS = {"add_numbers": {"a": 1, "b": 2}}
SCHEMA_TOOL, SCHEMA_ECHO = "json_schema_2020_12_tool", "json_schema_echo"


class _UserSink:
    """The user's side of a call: submits a question's form as the page offers it (the page's
    form is pre-filled with the schema's defaults)."""

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        pass

    async def log(self, level: str, message: str) -> None:
        pass

    async def elicit(self, message: str, schema: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
        fields = schema.get("properties", {})
        return ("accept", {name: field["default"] for name, field in fields.items() if "default" in field})

    async def sample(self, messages: list[dict[str, Any]], system_prompt: str | None, max_tokens: int) -> str:
        return "ok"


def server_entry(url: str, scenario: str, context: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The scenario's server in mcp.json, and the environment its `${VAR}` references read."""
    entry: dict[str, Any] = {"url": url, "timeout_s": 20}
    if scenario == "auth/client-credentials-jwt":
        entry["auth"] = {
            "type": "oauth",
            "grant": "client_credentials",
            "client_id": context["client_id"],
            "private_key": "${CONFORMANCE_PRIVATE_KEY}",
            "signing_algorithm": context.get("signing_algorithm", "ES256"),
        }
        return entry, {"CONFORMANCE_PRIVATE_KEY": context["private_key_pem"]}
    if scenario.startswith("auth/client-credentials"):
        entry["auth"] = {
            "type": "oauth",
            "grant": "client_credentials",
            "client_id": context["client_id"],
            "client_secret": "${CONFORMANCE_CLIENT_SECRET}",
        }
        return entry, {"CONFORMANCE_CLIENT_SECRET": context.get("client_secret", "")}
    if scenario == "auth/pre-registration":
        entry["auth"] = {
            "type": "oauth",
            "client_id": context["client_id"],
            "client_secret": "${CONFORMANCE_CLIENT_SECRET}",
        }
        return entry, {"CONFORMANCE_CLIENT_SECRET": context.get("client_secret", "")}
    if scenario.startswith("auth/"):
        entry["auth"] = {"type": "oauth"}
    return entry, {}


def scenario_arguments(context: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The arguments a scenario asks its tools to be called with (`toolCalls`), as a model would
    pass them; nulls stay (the host sends what the model wrote)."""
    return {call["name"]: call.get("arguments") or {} for call in context.get("toolCalls") or []}


def sign_in(client: Any) -> None:
    """A browser's part: Connect, the authorization server (which approves at once), the callback."""
    start = client.get(f"/api/servers/{SERVER}/connect", follow_redirects=False)
    if start.status_code != 302:
        raise SystemExit(f"Connect did not redirect: HTTP {start.status_code} {start.text}")
    answer = httpx.get(start.headers["location"], follow_redirects=False)
    back = urlsplit(answer.headers.get("location", ""))
    if not back.query:
        raise SystemExit(f"the authorization server did not redirect back: HTTP {answer.status_code} {answer.text}")
    done = client.get(f"/oauth/callback?{back.query}", follow_redirects=False)
    if done.status_code != 303 or not done.headers["location"].startswith("/?connected="):
        raise SystemExit(f"the callback failed: HTTP {done.status_code} {done.headers.get('location')}")


def use_skills(client: Any, services: Any, scenario: str) -> None:
    """The skills the model is offered (listed when the server connected), and each used as the model
    uses one: its SKILL.md, then the files it names. The no-prefetch scenario is a turn in which the
    model uses none."""
    user = User(email=USER_EMAIL, groups=frozenset({"users"}))
    shelf = services.engine.skills_for(TurnState(user=user, conversation=ConversationState(owner=user.email)), None)
    print(f"skills offered: {shelf.names}")
    if scenario == "sep-2640-client-no-prefetch":
        return
    for name in shelf.names:
        try:
            text = client.portal.call(shelf.use, name)
        except SwitchboardError as exc:
            print(f"skill {name}: refused: {exc.message}")
            continue
        print(f"skill {name}: {text[:200]}")
        named = text.rsplit(": ", 1)[-1].split(", ") if "Files of this skill" in text else []
        for path in named:
            print(f"skill {name} file {path}: {client.portal.call(shelf.read, name, path)[:100]}")


def main(url: str) -> None:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    entry, environ = server_entry(url, scenario, context)
    with tempfile.TemporaryDirectory(prefix="switchboard-conformance-") as folder:
        tmp = Path(folder)
        write_config(tmp / "defaults")
        write_config(tmp / "overrides", servers={SERVER: entry})
        settings = make_settings(tmp, auth_mode="dev", dev_user=USER_EMAIL, oauth_client_metadata_url=CIMD_URL)
        with running_app(settings, environ=environ) as (client, services):
            status = next(
                s
                for s in client.get(
                    "/api/config",
                ).json()["servers"]
                if s["name"] == SERVER
            )
            if status["status"] == "needs_auth":
                sign_in(client)
            pool = services.pool
            user = USER_EMAIL
            client.portal.call(pool.open_for_user, [SERVER], user, 30.0)
            deadline = time.monotonic() + 30
            while (status := client.portal.call(pool.user_status, SERVER, user)).status == "starting":
                if time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            if status.status != "ready":
                raise SystemExit(f"the server is {status.status} for the user: {status.reason}")
            tools = [t for t in pool.registry.all(user) if t.server == SERVER]
            arguments = {**ARGUMENTS, **scenario_arguments(context)}
            focal = next((t for t in tools if t.name == SCHEMA_TOOL), None)
            if focal is not None:  # the schema preservation scenario: echo the schema as the model is offered it
                arguments[SCHEMA_ECHO] = {"schema": focal.openai_schema()["function"]["parameters"]}
            for tool in tools:
                call = functools.partial(pool.call, tool, arguments.get(tool.name, {}), _UserSink(), user=user)
                try:
                    outcome = client.portal.call(call)
                except NeedsAuth as exc:  # e.g. more permissions (step-up): the user presses Connect, tries again
                    print(f"{tool.name}: {exc}")
                    sign_in(client)
                    outcome = client.portal.call(call)
                print(f"{tool.name}: ok={outcome.ok} {outcome.text[:200]}")
            use_skills(client, services, scenario)


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    main(sys.argv[1])
