"""The install plan: a registry entry and the values given, as an mcp.json server entry (remotes
first; packages for administrators only), which values are secrets, and bad data refused."""

from __future__ import annotations

from typing import Any

import pytest

from switchboard.config.models import ServerConfig
from switchboard.errors import BadRequest, Forbidden
from switchboard.registries import describe, parse_entry, plan_install, screen_plan
from switchboard.registries.entries import BadRegistryData
from tests.support.registry_double import package_server, remote_server

REGISTRY = "https://registry.example.org"


def entry(server: dict[str, Any], status: str = "active"):
    item = {"server": server, "_meta": {"io.modelcontextprotocol.registry/official": {"status": status}}}
    return parse_entry(item, REGISTRY)


TENANT = remote_server(
    "com.example/tenant",
    remotes=[
        {
            "type": "streamable-http",
            "url": "https://{tenant}.mcp.example.com/v1/{region}",
            "variables": {
                "tenant": {"description": "Your tenant", "isRequired": True},
                "region": {"default": "eu", "choices": ["eu", "us"]},
            },
            "headers": [
                {
                    "name": "Authorization",
                    "value": "Bearer {api_key}",
                    "variables": {"api_key": {"isRequired": True, "isSecret": True}},
                },
                {"name": "X-Client", "value": "switchboard"},
                {"name": "X-Team", "description": "optional team header"},
            ],
        },
        {"type": "sse", "url": "https://sse.example.com/sse"},
    ],
)


def test_a_remote_becomes_url_transport_and_headers_with_its_variables_filled():
    plan = plan_install(entry(TENANT), {"tenant": "acme", "api_key": "s3cret"}, is_admin=False)
    assert plan.kind == "remote" and plan.trust == "review" and plan.entry == "com.example/tenant"
    assert plan.fields == {
        "description": "A remote MCP server",
        "url": "https://acme.mcp.example.com/v1/eu",
        "transport": "http",
        "headers": {"Authorization": "Bearer s3cret", "X-Client": "switchboard"},
        "trust": "review",
    }
    assert plan.secrets == ("headers.Authorization",)
    assert plan.shown()["headers"] == {"Authorization": "********", "X-Client": "switchboard"}
    assert plan.fields["headers"]["Authorization"] == "Bearer s3cret"  # shown() copies
    ServerConfig.model_validate(plan.fields)


def test_an_sse_remote_is_an_sse_server():
    sse = remote_server("com.example/sse", remotes=[{"type": "sse", "url": "https://x.example.com/events"}])
    assert plan_install(entry(sse), {}, is_admin=False).fields["transport"] == "sse"


def test_a_missing_required_variable_is_refused_naming_every_missing_field():
    with pytest.raises(BadRequest, match="needs a value for: tenant, api_key; nothing was installed"):
        plan_install(entry(TENANT), {}, is_admin=False)


def test_a_value_outside_the_choices_is_refused():
    with pytest.raises(BadRequest, match="region' must be one of: eu, us"):
        plan_install(entry(TENANT), {"tenant": "a", "api_key": "k", "region": "mars"}, is_admin=False)


@pytest.mark.parametrize("value", ["a\r\nX-Evil: 1", "a\nb", "x" * 2001])
def test_a_value_with_line_breaks_or_too_long_is_refused(value):
    with pytest.raises(BadRequest, match="too long or holds control characters"):
        plan_install(entry(TENANT), {"tenant": "acme", "api_key": value}, is_admin=False)


def test_a_variable_cannot_move_the_url_to_another_host():
    plan = plan_install(entry(TENANT), {"tenant": "evil.com/steal?", "api_key": "k"}, is_admin=False)
    # percent-encoded: the host stays under mcp.example.com (and here is no valid host at all)
    assert plan.fields["url"].startswith("https://evil.com%2Fsteal%3F.mcp.example.com/")


@pytest.mark.parametrize(
    "url,words",
    [
        ("http://plain.example.com/mcp", "plain http"),
        ("https://127.0.0.1/mcp", "this machine or a private network address"),
        ("https://localhost:8000/mcp", "this machine or a private network address"),
        ("https://10.0.0.8/mcp", "this machine or a private network address"),
        ("https://169.254.169.254/latest", "this machine or a private network address"),
        ("https://[::1]/mcp", "this machine or a private network address"),
        ("https://user:pw@example.com/mcp", "user name or password"),
    ],
)
def test_a_url_the_endpoint_policy_refuses_is_refused(url, words):
    server = remote_server("com.example/where", remotes=[{"type": "streamable-http", "url": url}])
    with pytest.raises(BadRegistryData, match=words):
        plan_install(entry(server), {}, is_admin=True)


def test_a_leading_base_url_variable_is_taken_whole_and_still_checked():
    server = remote_server(
        "com.example/base",
        remotes=[{"type": "streamable-http", "url": "{base}/mcp", "variables": {"base": {"isRequired": True}}}],
    )
    assert (
        plan_install(entry(server), {"base": "https://mcp.acme.com"}, False).fields["url"] == "https://mcp.acme.com/mcp"
    )
    with pytest.raises(BadRegistryData, match="private network"):
        plan_install(entry(server), {"base": "https://192.168.1.1"}, False)


def test_the_operator_can_allow_a_host():
    server = remote_server("com.example/lab", remotes=[{"type": "streamable-http", "url": "http://127.0.0.1:9000/mcp"}])
    plan = plan_install(entry(server), {}, False, allowed_hosts=["127.0.0.1"])
    assert plan.fields["url"] == "http://127.0.0.1:9000/mcp"


async def test_screening_resolves_the_host_and_refuses_a_private_address():
    server = remote_server(
        "com.example/dns", remotes=[{"type": "streamable-http", "url": "https://inside.example.com/mcp"}]
    )
    plan = plan_install(entry(server), {}, False)

    async def private(host: str, port: int) -> list[str]:
        return ["10.1.2.3"]

    async def public(host: str, port: int) -> list[str]:
        return ["93.184.216.34"]

    with pytest.raises(BadRegistryData, match="private network address"):
        await screen_plan(plan, resolve=private)
    await screen_plan(plan, resolve=public)
    await screen_plan(plan, allowed_hosts=["inside.example.com"], resolve=private)


NPM = {
    "registryType": "npm",
    "registryBaseUrl": "https://registry.npmjs.org",
    "identifier": "@modelcontextprotocol/server-filesystem",
    "version": "1.0.2",
    "transport": {"type": "stdio"},
    "packageArguments": [{"type": "positional", "valueHint": "directory", "isRequired": True}],
    "environmentVariables": [
        {"name": "FS_TOKEN", "isSecret": True, "isRequired": True},
        {"name": "LOG", "default": "info"},
    ],
}


def test_packages_are_for_administrators_only():
    with pytest.raises(Forbidden) as refused:
        plan_install(entry(package_server("com.example/fs", NPM)), {"directory": "/srv", "FS_TOKEN": "t"}, False)
    assert refused.value.status == 403


def test_an_npm_package_runs_with_npx_at_its_exact_version():
    plan = plan_install(entry(package_server("com.example/fs", NPM)), {"directory": "/srv", "FS_TOKEN": "t"}, True)
    assert plan.kind == "package" and plan.trust == "review"
    assert plan.fields["command"] == "npx"
    assert plan.fields["args"] == ["-y", "@modelcontextprotocol/server-filesystem@1.0.2", "/srv"]
    assert plan.fields["env"] == {"FS_TOKEN": "t", "LOG": "info"}
    assert plan.secrets == ("env.FS_TOKEN",) and plan.shown()["env"]["FS_TOKEN"] == "********"
    config = ServerConfig.model_validate(plan.fields)
    assert config.transport == "stdio" and config.trust == "review"


def test_a_pypi_package_runs_with_uvx_from_and_its_command_may_differ_from_its_name():
    pypi = {
        "registryType": "pypi",
        "identifier": "weather-tools[mcp]",
        "version": "0.4.2",
        "transport": {"type": "stdio"},
        "packageArguments": [{"type": "named", "name": "--units", "value": "metric"}],
    }
    server = entry(package_server("com.example/weather", pypi))
    default = plan_install(server, {}, True)
    assert default.fields["command"] == "uvx"
    assert default.fields["args"] == ["--from", "weather-tools[mcp]==0.4.2", "weather-tools", "--units", "metric"]
    named = plan_install(server, {"command": "weather-mcp"}, True)
    assert named.fields["args"][:3] == ["--from", "weather-tools[mcp]==0.4.2", "weather-mcp"]
    command_field = [n for n in describe(server, True)["needs"] if n["name"] == "command"]
    assert command_field and command_field[0]["default"] == "weather-tools"
    with pytest.raises(BadRegistryData, match="plain program name"):
        plan_install(server, {"command": "sh -c 'curl evil'"}, True)


def test_an_oci_image_runs_with_docker_and_its_environment_passes_through():
    oci = {
        "registryType": "oci",
        "identifier": "ghcr.io/example/weather:1.2.0",
        "transport": {"type": "stdio"},
        "environmentVariables": [{"name": "API_KEY", "isSecret": True, "isRequired": True}],
    }
    plan = plan_install(entry(package_server("com.example/oci", oci)), {"API_KEY": "k"}, True)
    assert plan.fields["command"] == "docker"
    assert plan.fields["args"] == ["run", "-i", "--rm", "-e", "API_KEY", "ghcr.io/example/weather:1.2.0"]
    assert plan.fields["env"] == {"API_KEY": "k"} and plan.secrets == ("env.API_KEY",)


@pytest.mark.parametrize(
    "package,words",
    [
        ({**NPM, "registryType": "nuget"}, "unknown registryType 'nuget'"),
        ({**NPM, "registryType": "mcpb"}, "unknown registryType 'mcpb'"),
        ({**NPM, "registryType": "<script>"}, "unknown registryType '\\?'"),
        ({**NPM, "version": "^1.0.0"}, "no exact version"),
        ({**NPM, "version": "latest"}, "no exact version"),
        ({k: v for k, v in NPM.items() if k != "version"}, "no exact version"),
        ({**NPM, "identifier": "--registry=https://evil"}, "not a valid package name"),
        ({**NPM, "registryBaseUrl": "https://npm.evil.example"}, "another registry"),
        ({**NPM, "transport": {"type": "streamable-http", "url": "http://localhost:3000/mcp"}}, "stdio only"),
        (
            {**NPM, "runtimeHint": "npx", "runtimeArguments": [{"type": "named", "name": "--registry", "value": "x"}]},
            "runtime argument",
        ),
        (
            {
                "registryType": "oci",
                "identifier": "example/img:1",
                "transport": {"type": "stdio"},
                "runtimeArguments": [{"type": "named", "name": "-v", "value": "/:/host"}],
            },
            "runtime argument",
        ),
        ({"registryType": "oci", "identifier": "example/img", "transport": {"type": "stdio"}}, "tag or digest"),
    ],
)
def test_bad_package_data_is_refused_and_nothing_is_planned(package, words):
    with pytest.raises(BadRegistryData, match=words):
        plan_install(entry(package_server("com.example/bad", package)), {"directory": "/d", "FS_TOKEN": "t"}, True)


def test_remotes_come_first_and_an_administrator_may_ask_for_the_package():
    both = {**remote_server("com.example/both"), "packages": [NPM]}
    assert plan_install(entry(both), {}, True).kind == "remote"
    assert plan_install(entry(both), {"directory": "/d", "FS_TOKEN": "t"}, True, use="package").kind == "package"
    with pytest.raises(Forbidden):
        plan_install(entry(both), {}, False, use="package")


def test_an_entry_that_is_not_active_or_offers_nothing_is_refused():
    with pytest.raises(BadRegistryData, match="not active"):
        plan_install(entry(remote_server("com.example/old"), status="deprecated"), {}, True)
    bare = {"name": "com.example/bare", "description": "nothing", "version": "1"}
    with pytest.raises(BadRegistryData, match="neither a remote server nor a package"):
        plan_install(entry(bare), {}, True)


@pytest.mark.parametrize(
    "item,words",
    [
        ([], "not a ServerResponse"),
        ({"server": "x"}, "not a ServerResponse"),
        ({"server": {"name": "com.example/x", "version": "1"}}, "at 'description'"),
        ({"server": {**remote_server("com.example/x"), "version": "v" * 256}}, "at 'version'"),
        ({"server": {**remote_server("com.example/x"), "remotes": [{"type": "sse"}]}}, "at 'remotes.0.url'"),
    ],
)
def test_a_malformed_entry_is_refused_naming_the_field(item, words):
    with pytest.raises(BadRegistryData, match=words):
        parse_entry(item, REGISTRY)


def test_the_view_lists_what_an_entry_needs_as_fields_and_hides_packages_from_users():
    both = entry({**TENANT, "packages": [NPM]})
    user = describe(both, is_admin=False)
    assert user["transports"] == ["http", "sse"] and user["packages"] == []
    fields = {n["name"]: n for n in user["needs"]}
    assert fields["tenant"]["required"] and fields["tenant"]["where"] == "url"
    assert fields["region"]["choices"] == ["eu", "us"] and fields["region"]["default"] == "eu"
    assert fields["api_key"]["secret"] and fields["api_key"]["where"] == "header Authorization"
    assert not fields["X-Team"]["required"]
    assert "X-Client" not in fields  # a fixed header asks nothing
    admin = describe(both, is_admin=True)
    assert admin["transports"] == ["http", "sse", "stdio"]
    assert admin["packages"][0]["runtime"] == "npx" and admin["packages"][0]["supported"]
    assert {n["name"] for n in admin["packages"][0]["needs"]} == {"FS_TOKEN", "LOG", "directory"}


def test_a_template_name_the_publisher_did_not_declare_is_still_a_field():
    server = remote_server(
        "com.example/undeclared",
        remotes=[
            {
                "type": "streamable-http",
                "url": "https://mcp.example.com/{workspace}",
                "headers": [{"name": "Authorization", "value": "Bearer {token}", "isSecret": True, "isRequired": True}],
            }
        ],
    )
    fields = {n["name"]: n for n in describe(entry(server), False)["needs"]}
    assert fields["workspace"]["required"] and fields["token"]["secret"] and fields["token"]["required"]
    with pytest.raises(BadRequest, match="needs a value for: workspace, token"):
        plan_install(entry(server), {}, False)
    plan = plan_install(entry(server), {"workspace": "w1", "token": "t"}, False)
    assert plan.fields["url"] == "https://mcp.example.com/w1"
    assert plan.fields["headers"] == {"Authorization": "Bearer t"} and plan.secrets == ("headers.Authorization",)


def test_an_optional_header_left_empty_is_left_out():
    server = remote_server(
        "com.example/optional",
        remotes=[
            {
                "type": "streamable-http",
                "url": "https://mcp.example.com/mcp",
                "headers": [{"name": "X-Org", "value": "org={org}", "variables": {"org": {"isRequired": False}}}],
            }
        ],
    )
    assert "headers" not in plan_install(entry(server), {}, False).fields
    assert plan_install(entry(server), {"org": "a"}, False).fields["headers"] == {"X-Org": "org=a"}


def test_a_value_is_never_read_as_a_template_itself():
    server = remote_server(
        "com.example/twice",
        remotes=[
            {
                "type": "streamable-http",
                "url": "https://mcp.example.com/{a}/{b}",
                "headers": [{"name": "X-Pair", "value": "{a}:{b}", "variables": {"a": {}, "b": {}}}],
            }
        ],
    )
    plan = plan_install(entry(server), {"a": "{b}", "b": "two"}, False)
    assert plan.fields["url"] == "https://mcp.example.com/%7Bb%7D/two"
    assert plan.fields["headers"] == {"X-Pair": "{b}:two"}
