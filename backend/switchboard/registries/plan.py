"""The install plan: a registry entry and the values someone gave, as an mcp.json server entry.

`plan_install(entry, variables, is_admin)` is pure (no network, no store): the install routes
(`POST /api/servers` for a user, `POST /api/admin/servers` for an administrator, both with
`{"name", "from_registry", "variables"}`) call it, then `screen_plan` (the endpoint policy with
DNS, as OAuth sign-ins use), then store `plan.fields` with the values named in `plan.secrets`
sent to the vault; the fields hold `"trust": "review"`, so that its tools wait for approval.

- A remote comes first: its URL template filled (values percent-encoded, but for a leading base
  URL variable), its headers filled, transport `http` (streamable HTTP) or `sse`.
- A package, for administrators only (Forbidden, 403, for others): npm as `npx -y pkg@version`,
  PyPI as `uvx --from pkg==version <command>` (the `command` field, default the package's name:
  a package whose program is named otherwise still starts), OCI as `docker run -i --rm image`,
  with its environment variables passed through (`-e NAME`).  Only stdio packages; the runtime
  arguments an entry may add are a short list (none may mount, publish or grant privileges).
- Refused with a message, nothing planned: an unknown `registryType`, a package name or version
  that is not one exact package, a URL that is not https to a public host (unless the operator
  allows the host), a missing required value, a value with line breaks, an entry with nothing to
  install.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import ValidationError

from ..config.models import ServerConfig
from ..errors import Forbidden
from ..settings import is_loopback_host
from ..tools.oauth.url_guard import EndpointPolicy, Refusal, Resolve, is_public_address
from .entries import BadRegistryData, Input, KeyValueInput, Package, RegistryEntry, Remote
from .needs import PYPI_COMMAND, Filler

__all__ = ["InstallPlan", "host_allowed", "plan_install", "screen_plan"]

SECRET_SHOWN = "********"
_NPM_NAME = re.compile(r"^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*$")
_PYPI_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?(\[[A-Za-z0-9_.,-]+\])?$")
_OCI_REF = re.compile(r"^[a-z0-9][a-z0-9._/:-]*(:[A-Za-z0-9_][A-Za-z0-9._-]{0,127})?(@sha256:[a-f0-9]{64})?$")
_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+_-]*$")
_COMMAND = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_HEADER = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DEFAULT_BASES = {"npm": "https://registry.npmjs.org", "pypi": "https://pypi.org"}
# Runtime arguments an entry may add, by runtime: each takes one value.  Anything else (docker's
# -v, --privileged, --network, an npm --registry, a uv --index-url) changes where code comes from
# or what it may touch, and is refused.
_RUNTIME_FLAGS = {"docker": {"-e", "--env"}, "uvx": {"--python"}, "npx": set()}


@dataclass(frozen=True)
class InstallPlan:
    """An mcp.json server entry for a registry entry, and which of its values are secrets."""

    entry: str  # the registry entry's name
    registry: str
    kind: Literal["remote", "package"]
    fields: dict[str, Any]  # mcp.json's fields (a valid ServerConfig), secrets included
    secrets: tuple[str, ...] = ()  # "headers.<name>" / "env.<name>": values that go to the vault
    trust: str = "review"  # as `fields["trust"]`: an administrator approves each tool before it is used

    def shown(self) -> dict[str, Any]:
        """The fields with every secret value masked (what a page or a log may see)."""
        shown = {k: dict(v) if isinstance(v, dict) else v for k, v in self.fields.items()}
        for path in self.secrets:
            part, _, name = path.partition(".")
            shown[part][name] = SECRET_SHOWN
        return shown


def host_allowed(host: str, allowed: Collection[str]) -> bool:
    """Whether the operator allows `host` (exact names, or `*.example.com` for its subdomains)."""
    host = host.lower().strip("[]")
    for pattern in (p.lower() for p in allowed):
        if host == pattern or (pattern.startswith("*.") and host.endswith(pattern[1:])):
            return True
    return False


def plan_install(
    entry: RegistryEntry,
    variables: Mapping[str, object],
    is_admin: bool,
    *,
    use: Literal["remote", "package"] | None = None,
    allowed_hosts: Collection[str] = (),
) -> InstallPlan:
    """The plan for `entry` with the given `variables` (see the module's docstring), or an error
    that says why not: BadRequest (BadRegistryData for the registry's data), Forbidden."""
    server = entry.server
    if not entry.active:
        raise BadRegistryData(f"'{entry.name}' is not active in its registry ({entry.status or 'no status'})")
    if use != "package" and server.remotes:
        return _remote_plan(entry, server.remotes[0], variables, allowed_hosts)
    if not server.packages:
        raise BadRegistryData(f"'{entry.name}' offers neither a remote server nor a package to install")
    if not is_admin:
        raise Forbidden(
            f"'{entry.name}' runs as a local package (a program on this host): only administrators may install it",
            action="Pick an entry with a remote server, or ask your administrator.",
        )
    return _package_plan(entry, server.packages[0], variables)


def _remote_plan(
    entry: RegistryEntry, remote: Remote, variables: Mapping[str, object], allowed_hosts: Collection[str]
) -> InstallPlan:
    fill = Filler(variables, entry.name)
    url, _ = fill.template(remote.url, remote.variables)
    headers, secrets = _filled(entry.name, "headers", remote.headers, fill)
    fill.check_complete()  # a URL with a hole has a missing value
    if url is None:
        raise BadRegistryData(f"'{entry.name}': its server URL could not be filled in")
    _check_url(entry.name, url, allowed_hosts)
    fields: dict[str, Any] = {
        "description": entry.server.description,
        "url": url,
        "transport": "sse" if remote.type == "sse" else "http",
        "trust": "review",
    }
    if headers:
        fields["headers"] = headers
    return InstallPlan(entry.name, entry.registry, "remote", _valid(entry.name, fields), tuple(secrets))


_NAMED = {
    "headers": (_HEADER, "a header that is not a valid header name"),
    "env": (_ENV, "an environment variable that is not a valid name"),
}


def _filled(
    name: str, part: Literal["headers", "env"], items: list[KeyValueInput], fill: Filler
) -> tuple[dict[str, str], list[str]]:
    """Headers or environment variables filled in (an optional one not given is left out), and
    the paths (`headers.<name>`, `env.<name>`) of those that hold a secret."""
    pattern, what = _NAMED[part]
    values: dict[str, str] = {}
    secrets: list[str] = []
    for item in items:
        if not pattern.match(item.name):
            raise BadRegistryData(f"'{name}' names {what}")
        value, secret = fill.key_value(item)
        if value is not None:
            values[item.name] = value
            if secret:
                secrets.append(f"{part}.{item.name}")
    return values, secrets


def _check_url(name: str, url: str, allowed_hosts: Collection[str]) -> None:
    """The endpoint policy's rules that need no DNS: https, a host, no credentials in it, not this
    machine, not a private address literal (unless the operator allows the host)."""
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").strip("[]")
        parts.port  # noqa: B018 (a port that is not a number raises here)
    except ValueError:
        raise BadRegistryData(f"'{name}': its server URL is not a valid URL once filled in") from None
    if parts.scheme not in ("http", "https") or not host:
        raise BadRegistryData(f"'{name}': its server URL is not an http(s) URL once filled in")
    if parts.username is not None or parts.password is not None:
        raise BadRegistryData(f"'{name}': its server URL carries a user name or password")
    if host_allowed(host, allowed_hosts):
        return
    where = f"{parts.scheme}://{parts.netloc}"
    if parts.scheme != "https":
        raise BadRegistryData(f"'{name}': its server URL {where} is plain http (a remote server needs https)")
    if is_loopback_host(host) or _private_literal(host):
        raise BadRegistryData(
            f"'{name}': its server URL {where} is on this machine or a private network address",
            action="Only servers on public addresses may be installed; your administrator can allow a host.",
        )


def _private_literal(host: str) -> bool:
    try:
        return not is_public_address(host)
    except ValueError:
        return False  # a name: screen_plan resolves it


async def screen_plan(
    plan: InstallPlan, *, allowed_hosts: Collection[str] = (), resolve: Resolve | None = None
) -> None:
    """The endpoint policy with DNS for a remote plan's URL: every address its host resolves to
    must be public (BadRegistryData when not).  The connection itself pins the address again."""
    url = plan.fields.get("url")
    if not isinstance(url, str) or host_allowed(urlsplit(url).hostname or "", allowed_hosts):
        return
    policy = EndpointPolicy(server=plan.entry) if resolve is None else EndpointPolicy(plan.entry, resolve=resolve)
    found = await policy.screen(url)
    if isinstance(found, Refusal):
        raise BadRegistryData(
            f"'{plan.entry}': its server URL {found.where} was refused, as {found.why}",
            action="Only servers on public addresses may be installed; your administrator can allow a host.",
        )


def _package_plan(entry: RegistryEntry, package: Package, variables: Mapping[str, object]) -> InstallPlan:
    kind = package.registryType
    if kind not in ("npm", "pypi", "oci"):
        shown = kind if re.fullmatch(r"[a-z0-9_-]{1,30}", kind) else "?"
        raise BadRegistryData(
            f"'{entry.name}': its package has the unknown registryType '{shown}' (Switchboard installs npm, pypi and oci)"
        )
    if package.transport.type != "stdio":
        raise BadRegistryData(
            f"'{entry.name}': its package serves {package.transport.type}; packages are started over stdio only"
        )
    base = _DEFAULT_BASES.get(kind)
    if base and package.registryBaseUrl and package.registryBaseUrl.rstrip("/") != base:
        raise BadRegistryData(f"'{entry.name}': its {kind} package comes from another registry than {base}")
    fill = Filler(variables, entry.name)
    env, secrets = _filled(entry.name, "env", package.environmentVariables, fill)
    runtime = {"npm": "npx", "pypi": "uvx", "oci": "docker"}[kind]
    runtime_args = _runtime_args(entry.name, runtime, package, fill)
    package_args = [a for arg in package.packageArguments for a in fill.argument(arg)]
    command = fill.given(PYPI_COMMAND, _command_input(package)) if kind == "pypi" else None
    fill.check_complete()
    args = _launch_args(entry.name, kind, package, command, runtime_args, sorted(env))
    fields: dict[str, Any] = {
        "description": entry.server.description,
        "command": runtime,
        "args": args + package_args,
        "trust": "review",
    }
    if env:
        fields["env"] = env
    return InstallPlan(entry.name, entry.registry, "package", _valid(entry.name, fields), tuple(secrets))


def _command_input(package: Package) -> Input:
    return Input(default=re.split(r"[\[=<>~!]", package.identifier, maxsplit=1)[0])


def _runtime_args(name: str, runtime: str, package: Package, fill: Filler) -> list[str]:
    out: list[str] = []
    for arg in package.runtimeArguments:
        if arg.type != "named" or arg.name not in _RUNTIME_FLAGS[runtime]:
            raise BadRegistryData(
                f"'{name}': its package asks {runtime} for a runtime argument Switchboard does not pass "
                "(it could change where the code comes from or what it may reach)",
                action="Add the server to mcp.json by hand if you trust it.",
            )
        out += fill.argument(arg)
    if runtime == "docker":
        for i in range(1, len(out), 2):
            if not _ENV.match(out[i]):
                raise BadRegistryData(f"'{name}': its docker -e argument must name an environment variable")
    return out


def _launch_args(
    name: str, kind: str, package: Package, command: str | None, runtime_args: list[str], env: list[str]
) -> list[str]:
    ident, version = package.identifier, package.version
    if kind == "oci":
        if not _OCI_REF.match(ident) or not re.search(r"(:[^/]+|@sha256:[a-f0-9]{64})$", ident):
            raise BadRegistryData(f"'{name}': its OCI image is not one exact image reference with a tag or digest")
        return ["run", "-i", "--rm", *runtime_args, *(a for e in env for a in ("-e", e)), ident]
    pattern = _NPM_NAME if kind == "npm" else _PYPI_NAME
    if not pattern.match(ident):
        raise BadRegistryData(f"'{name}': its {kind} package name is not a valid package name")
    if version is None or version == "latest" or not _VERSION.match(version):
        raise BadRegistryData(f"'{name}': its {kind} package has no exact version (a range or 'latest' is refused)")
    if kind == "npm":
        return ["-y", *runtime_args, f"{ident}@{version}"]
    if command is None or not _COMMAND.match(command):
        raise BadRegistryData(f"'{name}': the PyPI package's command must be a plain program name")
    return [*runtime_args, "--from", f"{ident}=={version}", command]


def _valid(name: str, fields: dict[str, Any]) -> dict[str, Any]:
    try:
        ServerConfig.model_validate(fields)
    except ValidationError as exc:
        raise BadRegistryData(f"'{name}' does not make a valid mcp.json entry: {exc.errors()[0]['msg']}") from None
    return fields
