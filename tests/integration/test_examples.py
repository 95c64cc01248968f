"""Every snippet in config/examples/ loads as an override mcp.json, and its server
starts over stdio through the host's own transport code and lists its tools.

The Python servers always run (under CI=true a missing package fails instead of
skipping). The npm servers run only when `npx` is present and npx has the package
cached already, so the test never waits for a download; run a server once with
`npx -y <package>` to cache it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from fastmcp import Client

from switchboard.chat.calls.approvals import approval_reason
from switchboard.config import ServerConfig, load_mcp_config
from switchboard.tools.registry import ToolRegistry
from switchboard.tools.servers.transports import build_transport, stderr_path

CONFIG_DIR = Path(__file__).resolve().parents[2] / "config"
EXAMPLES_DIR = CONFIG_DIR / "examples"
EXAMPLES = sorted(EXAMPLES_DIR.glob("*.json"))
IN_CI = os.environ.get("CI", "").lower() == "true"

# one tool each server must list
EXPECTED_TOOL = {
    "everything": "echo",
    "filesystem": "list_directory",
    "git": "git_status",
    "memory": "read_graph",
    "time": "get_current_time",
}


def test_every_expected_example_exists():
    assert {p.stem for p in EXAMPLES} >= set(EXPECTED_TOOL)
    assert (EXAMPLES_DIR / "README.md").is_file()


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
async def test_example_server_lists_tools(example: Path, tmp_path: Path):
    project = tmp_path / "project"  # stands in for the project root
    project.mkdir()
    (tmp_path / "overrides").mkdir()
    (tmp_path / "overrides" / "mcp.json").write_text(example.read_text())
    environ = {**os.environ, "HOME": str(tmp_path)}  # ${HOME} in a snippet lands in tmp_path

    config = load_mcp_config(tmp_path / "defaults", tmp_path / "overrides", environ=environ)

    assert not config.file_errors and not config.errors, (config.file_errors, config.errors)
    [(name, server)] = config.servers.items()
    assert name == example.stem
    entry = json.loads(example.read_text())["servers"][name]
    assert entry["groups"] == ["*"] and entry["description"]
    assert entry["compliance_level"] in _shipped_compliance_levels()
    server = _runnable(server)
    _prepare(name, project)

    transport = build_transport(name, server, project_root=project, log_dir=tmp_path / "logs")
    async with Client(transport, timeout=60, init_timeout=60) as client:
        tools = {t.name for t in await client.list_tools()}

    log = stderr_path(tmp_path / "logs", name)
    assert EXPECTED_TOOL[name] in tools, log.read_text() if log.exists() else tools


async def test_git_example_asks_before_every_tool_that_changes_the_repository(tmp_path: Path):
    """The default `destructive` policy asks for every tool that does not say read-only,
    including additive writes that say `destructiveHint: false` (git_add, git_commit)."""
    (tmp_path / "overrides").mkdir()
    (tmp_path / "overrides" / "mcp.json").write_text((EXAMPLES_DIR / "git.json").read_text())
    config = load_mcp_config(tmp_path / "defaults", tmp_path / "overrides", environ=dict(os.environ))
    server = _runnable(config.servers["git"])
    project = tmp_path / "project"
    project.mkdir()
    _prepare("git", project)

    transport = build_transport("git", server, project_root=project, log_dir=tmp_path / "logs")
    async with Client(transport, timeout=60, init_timeout=60) as client:
        listed = await client.list_tools()
    registry = ToolRegistry()
    registry.rebuild([("git", server, listed)])
    asks = {t.name for t in registry.all() if approval_reason(t, server, set()) is not None}

    assert {"git_add", "git_commit", "git_create_branch", "git_checkout", "git_reset"} <= asks
    assert not asks & {"git_status", "git_log", "git_diff", "git_show"}


def _shipped_compliance_levels() -> set[str]:
    data = json.loads((CONFIG_DIR / "defaults" / "compliance-levels.json").read_text())
    return {level["name"] for level in data["levels"]}


def _runnable(server: ServerConfig) -> ServerConfig:
    """Skip (or fail, under CI for Python servers) when the server cannot start here."""
    if server.command in ("python", "python3"):
        module = server.args[server.args.index("-m") + 1]
        if importlib.util.find_spec(module) is None:
            reason = f"Python module {module} is not installed (uv sync installs the dev group)"
            if IN_CI:
                pytest.fail(reason)
            pytest.skip(reason)
        return server
    if server.command == "npx":
        if shutil.which("npx") is None:
            pytest.skip("npx (Node.js) is not installed")
        package = next(a for a in server.args if not a.startswith("-"))
        if not _in_npx_cache(package):
            pytest.skip(f"{package} is not in the npx cache; run `npx -y {package}` once")
        # The child gets a minimal environment: npx needs PATH and HOME (its cache),
        # and must not wait on the registry when the package is cached.
        env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "")}
        env |= {"npm_config_prefer_offline": "true", **server.env}
        return server.model_copy(update={"env": env})
    pytest.fail(f"no rule to run command {server.command!r}; teach this test about it")


def _in_npx_cache(package: str) -> bool:
    cache = Path(os.environ.get("npm_config_cache") or Path.home() / ".npm")  # noqa: SIM112  (npm's own lower-case name)
    return any(
        (manifest.parent / "node_modules" / package / "package.json").is_file()
        for manifest in cache.glob("_npx/*/package.json")
    )


def _prepare(name: str, project: Path) -> None:
    """What a site does before enabling the snippet (see config/examples/README.md)."""
    if name == "git":
        subprocess.run(["git", "init", "-q", str(project)], check=True)
    if name == "filesystem":
        (project / "data" / "shared-files").mkdir(parents=True)
