"""mcp.json `auth` and `per_user`: what is accepted, and what is refused with words that say why."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from switchboard.config.models import ServerConfig


def test_auth_makes_sessions_per_user_by_default():
    token = ServerConfig(url="https://x/mcp", auth={"type": "user_token"})
    assert token.sessions_per_user and token.auth.header == "Authorization" and token.auth.format == "Bearer {token}"
    oauth = ServerConfig(url="https://x/mcp", auth={"type": "oauth", "scopes": "read write"})
    assert oauth.sessions_per_user and oauth.auth.scopes == ["read", "write"]
    assert not ServerConfig(url="https://x/mcp").sessions_per_user
    assert ServerConfig(url="https://x/mcp", per_user=True).sessions_per_user


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ({"command": "python", "auth": {"type": "user_token"}}, "never gets a user's credential"),
        (
            {"url": "https://x/mcp", "auth": {"type": "user_token"}, "per_user": False},
            "one user's session would serve another",
        ),
        ({"url": "https://x/mcp", "auth": {"type": "user_token", "format": "Bearer"}}, "must contain {token}"),
        (
            {"url": "https://x/mcp", "auth": {"type": "oauth", "grant": "client_credentials"}},
            "needs .client_id. and .client_secret.",
        ),
        ({"url": "https://x/mcp", "auth": {"type": "password"}}, "does not match any of the expected tags"),
        ({"url": "https://x/mcp", "idle_close_s": 0}, "greater than 0"),
    ],
)
def test_impossible_auth_entries_are_refused(entry, words):
    with pytest.raises(ValidationError, match=words.replace("{", r"\{").replace("}", r"\}")):
        ServerConfig(**entry)


def test_a_client_secret_comes_from_the_environment(tmp_path):
    import json

    from switchboard.config.loader import load_mcp_config

    (tmp_path / "d").mkdir()
    (tmp_path / "o").mkdir()
    entry = {"url": "https://x/mcp", "auth": {"type": "oauth", "client_id": "sb", "client_secret": "${SB_SECRET}"}}
    (tmp_path / "o" / "mcp.json").write_text(json.dumps({"servers": {"x": entry}}))
    loaded = load_mcp_config(tmp_path / "d", tmp_path / "o", {"SB_SECRET": "from-env"})
    assert loaded.servers["x"].auth.client_secret == "from-env"
    assert loaded.servers["x"].auth.client_id == "sb"
