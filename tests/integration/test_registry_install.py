"""Installing a registry entry (`{"name", "from_registry", "variables"}`): a user's own server on
`POST /api/servers`, a deployment server on `POST /api/admin/servers`. The registry is the local
double (API v0.1, server.json); the remote is a real toolbox over streamable HTTP on 127.0.0.1
(allowed through SWITCHBOARD_USER_SERVER_HOSTS). Secrets go to the vault; everything installed
starts in review; bad registry data installs nothing and says why."""

from __future__ import annotations

import time
from urllib.parse import urlsplit

import pytest

from tests.support.harness import make_settings, run_toolbox_server, running_app, write_config
from tests.support.registry_double import RegistryDouble, package_server, remote_server

SECRET = "registry-install-secret"
ALICE = {"x-user-email": "alice@example.com", "x-proxy-secret": SECRET}
BOB = {"x-user-email": "bob@example.com", "x-proxy-secret": SECRET}
ADMIN = {"x-user-email": "root@example.com", "x-proxy-secret": SECRET}
TOKEN = "registry-header-secret-9931"
PKG_KEY = "package-env-secret-5150"

pytestmark = pytest.mark.slow


def _local(name: str) -> dict:
    """An entry whose remote is the toolbox on 127.0.0.1: its port a URL variable, a secret header."""
    return remote_server(
        name,
        description="The toolbox",
        remotes=[
            {
                "type": "streamable-http",
                "url": "http://127.0.0.1:{port}/mcp",
                "variables": {"port": {"description": "Its port", "isRequired": True}},
                "headers": [{"name": "X-Token", "isSecret": True, "isRequired": True}],
            }
        ],
    )


PYPI = package_server(
    "com.example/pytools",
    {
        "registryType": "pypi",
        "identifier": "weather-tools",
        "version": "1.2.0",
        "transport": {"type": "stdio"},
        "environmentVariables": [{"name": "API_KEY", "isSecret": True, "isRequired": True}],
    },
)


@pytest.fixture(scope="module")
def outside():
    """The registry double and the toolbox, for the module's tests: (registry, the toolbox's port)."""
    with RegistryDouble() as registry, run_toolbox_server("http") as url:
        registry.publish(_local("com.example/toolbox"))
        registry.publish(PYPI)
        registry.publish(
            package_server(
                "com.example/nuget",
                {"registryType": "nuget", "identifier": "Tools", "version": "1.0.0", "transport": {"type": "stdio"}},
            )
        )
        registry.publish(remote_server("com.example/private", remotes=[{"type": "sse", "url": "https://10.1.2.3/sse"}]))
        yield registry, str(urlsplit(url).port)


@pytest.fixture
def site(tmp_path, outside):
    registry, port = outside
    write_config(tmp_path / "defaults", groups={"*@example.com": ["users"], "root@example.com": ["users", "admin"]})
    settings = make_settings(
        tmp_path,
        auth_mode="proxy",
        proxy_secret=SECRET,
        registry_urls=[registry.base_url],
        user_server_hosts=["127.0.0.1"],
    )
    with running_app(settings) as (client, services):
        yield client, services, registry, port
    registry.padding = 0


def _stored(tmp_path) -> bytes:
    return b"".join(p.read_bytes() for p in (tmp_path / "data").glob("switchboard.db*"))


def _tools(client, path: str, headers: dict, server: str | None = None, timeout_s: float = 30) -> list[dict]:
    deadline = time.monotonic() + timeout_s
    while True:
        answer = client.get(path, headers=headers)
        assert answer.status_code == 200, answer.text
        found = [t for t in answer.json()["tools"] if server is None or t["server"] == server]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def test_a_user_installs_an_entrys_remote_with_its_variables_and_its_secret_in_the_vault(site, tmp_path):
    client, services, _, port = site
    body = {"name": "tb", "from_registry": "com.example/toolbox", "variables": {"port": port, "X-Token": TOKEN}}
    added = client.post("/api/servers", json=body, headers=ALICE)
    assert added.status_code == 201, added.text
    server = added.json()["server"]
    assert added.json()["trust"] == "review"
    mine = {s["name"]: s for s in client.get("/api/servers", headers=ALICE).json()["servers"]}
    assert mine["tb"]["url"] == f"http://127.0.0.1:{port}/mcp" and mine["tb"]["headers"] == ["X-Token"]
    assert TOKEN not in str(mine) and TOKEN.encode() not in _stored(tmp_path)
    config = services.pool.server_config(server)
    assert config.headers == {"X-Token": TOKEN} and config.owner == "alice@example.com"
    assert "com.example/toolbox" in config.description
    tools = _tools(client, "/api/servers/tb/tools", ALICE)
    assert tools and all(t["state"] == "pending" for t in tools)
    assert client.get("/api/servers", headers=BOB).json()["servers"] == []


REFUSED = [
    ({"from_registry": "com.example/toolbox", "variables": {"X-Token": TOKEN}}, 400, "port"),
    ({"from_registry": "com.example/pytools", "variables": {"API_KEY": "k"}}, 403, "administrators"),
    ({"from_registry": "com.example/private"}, 400, "private network"),
    ({"from_registry": "com.example/nowhere"}, 404, "no registry offers"),
    ({"from_registry": "com.example/toolbox", "variables": "port"}, 400, "variables"),
    ({"from_registry": "com.example/toolbox", "url": "http://127.0.0.1/"}, 400, "url"),
]


def test_a_users_install_that_cannot_be_done_says_why_and_installs_nothing(site):
    client, services, _, _ = site
    before = set(services.pool.mcp.servers)
    for body, status, says in REFUSED:
        answer = client.post("/api/servers", json={"name": "tb", **body}, headers=ALICE)
        assert answer.status_code == status, (body, answer.text)
        assert says in answer.json()["error"]["message"], (body, answer.text)
    assert client.get("/api/servers", headers=ALICE).json()["servers"] == []
    assert set(services.pool.mcp.servers) == before


def test_bad_registry_data_is_refused_and_installs_nothing(site):
    client, _, registry, _ = site
    registry.publish({**_local("com.example/broken"), "description": "x" * 500})  # over server.json's 100
    broken = client.post("/api/servers", json={"name": "b", "from_registry": "com.example/broken"}, headers=ALICE)
    assert broken.status_code == 400 and "does not fit server.json" in broken.json()["error"]["message"]
    registry.padding = 3 * 1024 * 1024  # every answer over the 2 MiB a registry may send
    body = {"name": "big", "from_registry": "com.example/pytools", "variables": {"API_KEY": "k"}}
    big = client.post("/api/admin/servers", json=body, headers=ADMIN)
    assert big.status_code == 400 and "over" in big.json()["error"]["message"], big.text
    registry.padding = 0  # (and the fixture's end puts it back for the next test)
    unknown = client.post("/api/admin/servers", json={"name": "n", "from_registry": "com.example/nuget"}, headers=ADMIN)
    assert unknown.status_code == 400 and "unknown registryType 'nuget'" in unknown.json()["error"]["message"]
    names = {s["name"] for s in client.get("/api/admin/servers", headers=ADMIN).json()["servers"]}
    assert not names & {"b", "big", "n"} and client.get("/api/servers", headers=ALICE).json()["servers"] == []


def test_an_administrator_installs_a_pypi_package_whose_command_is_not_its_name(site, tmp_path):
    client, services, _, _ = site
    body = {
        "name": "pytools",
        "from_registry": "com.example/pytools",
        "variables": {"command": "weather-mcp", "API_KEY": PKG_KEY},
        "enabled": False,  # nothing is started (uvx would fetch the package)
        "groups": ["users"],
    }
    added = client.post("/api/admin/servers", json=body, headers=ADMIN)
    assert added.status_code == 201, added.text
    config = services.pool.server_config("pytools")
    assert config.command == "uvx" and config.args == ["--from", "weather-tools==1.2.0", "weather-mcp"]
    assert config.env == {"API_KEY": PKG_KEY} and config.groups == ["users"] and not config.enabled
    assert services.pool.mcp.trust["pytools"] == "review"
    assert PKG_KEY.encode() not in _stored(tmp_path), "the secret is sealed in the vault, not in the row"
    listed = {s["name"]: s for s in client.get("/api/admin/servers", headers=ADMIN).json()["servers"]}
    assert listed["pytools"]["source"] == "admin" and PKG_KEY not in str(listed)
    assert client.delete("/api/admin/servers/pytools", headers=ADMIN).status_code == 204
    assert "pytools" not in services.pool.mcp.servers
    again = client.post("/api/admin/servers", json={**body, "variables": {"command": "weather-mcp"}}, headers=ADMIN)
    assert again.status_code == 400 and "API_KEY" in again.json()["error"]["message"], "its secret went with it"


def test_an_administrator_installs_a_remote_for_a_group_and_it_starts_in_review(site, tmp_path):
    client, services, _, port = site
    body = {
        "name": "shared-tb",
        "from_registry": "com.example/toolbox",
        "variables": {"port": port, "X-Token": TOKEN},
        "groups": ["users"],
    }
    added = client.post("/api/admin/servers?check=true", json=body, headers=ADMIN)
    assert added.status_code == 201, added.text
    assert services.pool.server_config("shared-tb").headers == {"X-Token": TOKEN}
    assert TOKEN.encode() not in _stored(tmp_path)
    tools = _tools(client, "/api/admin/tools", ADMIN, server="shared-tb")
    assert tools and all(t["state"] == "pending" for t in tools)
    assert "shared-tb" in {s["name"] for s in client.get("/api/config", headers=BOB).json()["servers"]}
    records = client.get("/api/admin/audit?kind=admin_action&limit=50", headers=ADMIN).json()["records"]
    assert any(r["server"] == "shared-tb" and "from_registry" in r["fields"] for r in records)
    assert TOKEN not in str(records)
