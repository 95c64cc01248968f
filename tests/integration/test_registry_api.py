"""GET /api/registry/servers: users see the entries they could install (with a remote),
administrators every entry (packages too); each with what it needs as fields; a registry that
went down is served from the cache with its age."""

from __future__ import annotations

import pytest

from tests.support.harness import make_settings, running_app, write_config
from tests.support.registry_double import RegistryDouble, package_server, remote_server

SECRET = "registry-secret"
ADMIN = {"x-user-email": "root@example.com", "x-proxy-secret": SECRET}
USER = {"x-user-email": "bob@example.com", "x-proxy-secret": SECRET}

pytestmark = pytest.mark.slow


@pytest.fixture
def site(tmp_path):
    write_config(tmp_path / "defaults", groups={"*@example.com": ["users"], "root@example.com": ["users", "admin"]})
    with RegistryDouble() as registry:
        registry.publish(
            remote_server(
                "com.example/weather",
                description="Weather <b>forecasts</b>",
                remotes=[
                    {
                        "type": "streamable-http",
                        "url": "https://{city}.weather.example.com/mcp",
                        "variables": {"city": {"description": "Your city", "isRequired": True}},
                        "headers": [{"name": "X-Api-Key", "isSecret": True, "isRequired": True}],
                    }
                ],
            )
        )
        registry.publish(
            package_server(
                "com.example/files",
                {"registryType": "npm", "identifier": "files-mcp", "version": "2.0.0", "transport": {"type": "stdio"}},
            )
        )
        registry.publish(remote_server("com.example/retired"), status="deprecated")
        settings = make_settings(tmp_path, auth_mode="proxy", proxy_secret=SECRET, registry_urls=[registry.base_url])
        with running_app(settings) as (client, services):
            yield client, registry, services


def test_users_see_remote_entries_with_what_they_need_and_admins_see_packages_too(site):
    client, _, _ = site
    users = client.get("/api/registry/servers", headers=USER)
    assert users.status_code == 200
    body = users.json()
    assert [s["name"] for s in body["servers"]] == ["com.example/weather"]
    weather = body["servers"][0]
    assert weather["description"] == "Weather <b>forecasts</b>"  # data, for textContent
    assert weather["version"] == "1.0.0" and weather["transports"] == ["http"] and weather["packages"] == []
    assert [(n["name"], n["where"], n["required"], n["secret"]) for n in weather["needs"]] == [
        ("city", "url", True, False),
        ("X-Api-Key", "header X-Api-Key", True, True),
    ]
    assert body["registries"][0]["ok"] and body["registries"][0]["stale_since"] is None
    admins = client.get("/api/registry/servers", headers=ADMIN).json()
    assert sorted(s["name"] for s in admins["servers"]) == ["com.example/files", "com.example/weather"]
    files = next(s for s in admins["servers"] if s["name"] == "com.example/files")
    assert files["transports"] == ["stdio"] and files["packages"][0]["runtime"] == "npx"


def test_search_narrows_the_list_and_goes_to_the_registry(site):
    client, registry, _ = site
    body = client.get("/api/registry/servers", params={"search": "files"}, headers=ADMIN).json()
    assert [s["name"] for s in body["servers"]] == ["com.example/files"]
    assert any(q.get("search") == "files" for _, q in registry.requests)
    assert client.get("/api/registry/servers", params={"search": "x" * 201}, headers=USER).status_code == 422


def test_a_registry_that_went_down_is_served_from_the_cache_and_says_so(site):
    client, registry, services = site
    assert client.get("/api/registry/servers", headers=USER).json()["registries"][0]["ok"]
    registry.down = True
    services.registries.refresh_s = services.registries.retry_s = 0  # the next request asks again
    body = client.get("/api/registry/servers", headers=USER).json()
    assert [s["name"] for s in body["servers"]] == ["com.example/weather"]
    state = body["registries"][0]
    assert not state["ok"] and "HTTP 503" in state["error"]
    assert state["stale_since"] is not None and state["age_s"] >= 0


def test_strangers_are_refused(site):
    client, _, _ = site
    assert client.get("/api/registry/servers").status_code == 401
