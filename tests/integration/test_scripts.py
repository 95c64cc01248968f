"""The README's commands as a new user types them: `./scripts/serve` installs only what serving
needs (no test tools; the Docker image the same) and serves, and the README's `./scripts/chat`
line then answers from that same environment."""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import httpx
import pytest

from switchboard.settings import PROJECT_ROOT
from tests.support.harness import free_port, write_config

pytestmark = pytest.mark.timeout(600)  # the first test waits for uv to install a fresh environment

README = (PROJECT_ROOT / "README.md").read_text()
SERVE_FLAGS = "--frozen --quiet --no-default-groups --inexact"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """`./scripts/serve` as the README runs it, into an environment of its own."""
    tmp = tmp_path_factory.mktemp("scripts")
    write_config(tmp / "defaults", servers={})
    uv = os.environ.get("UV")
    env = {**os.environ, "UV_PROJECT_ENVIRONMENT": str(tmp / "venv"), "SWITCHBOARD_DEFAULTS_DIR": str(tmp / "defaults"),
           "SWITCHBOARD_CONFIG_DIR": str(tmp / "overrides"), "SWITCHBOARD_DATA_DIR": str(tmp / "data"),
           "SWITCHBOARD_LOG_DIR": str(tmp / "logs"), "VIRTUAL_ENV": ""}  # fmt: skip
    if uv:  # the uv that runs the tests, for the scripts too
        env["PATH"] = f"{Path(uv).parent}{os.pathsep}{env['PATH']}"
    port = free_port()
    proc = subprocess.Popen(["./scripts/serve", "--port", str(port)], cwd=PROJECT_ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 400  # a fresh environment: uv installs it first
        while True:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            try:
                if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "./scripts/serve did not serve"
            time.sleep(0.5)
        yield base, tmp / "venv", env
    finally:
        proc.terminate()
        proc.wait(30)


def _site_packages(venv: Path) -> Path:
    return next(venv.glob("lib/python3*/site-packages"))


def test_serve_installs_only_what_serving_needs(served):
    _, venv, _ = served
    installed = {p.name.split("-")[0].lower() for p in _site_packages(venv).glob("*.dist-info")}
    assert {"litellm", "fastmcp", "fastapi", "uvicorn"} <= installed
    groups = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["dependency-groups"]
    dev = [re.split(r"[<>=\[ ]", d, maxsplit=1)[0].replace("-", "_").lower() for d in groups["dev"] if isinstance(d, str)]
    examples = [re.split(r"[<>=\[ ]", d, maxsplit=1)[0].replace("-", "_").lower() for d in groups["examples"]]
    for name in ("pytest", "playwright", "hypothesis", "mcp_server_git", "mcp_server_time"):
        assert name in dev + examples and name not in installed, name
    assert importlib.util.find_spec("pytest") is not None, "the tests' own environment has everything"


def test_the_image_and_the_serve_script_install_the_same():
    bootstrap = (PROJECT_ROOT / "scripts" / "bootstrap.sh").read_text()
    assert f"uv sync {SERVE_FLAGS}" in bootstrap
    assert 'SWITCHBOARD_INSTALL=serve source' in (PROJECT_ROOT / "scripts" / "serve").read_text()
    syncs = re.findall(r"uv sync ([^\n\\&]*)", (PROJECT_ROOT / "Dockerfile").read_text())
    assert len(syncs) == 2 and all("--no-default-groups" in s and "--frozen" in s for s in syncs), syncs
    assert "--all-groups" in bootstrap and "SWITCHBOARD_INSTALL" not in (PROJECT_ROOT / "scripts" / "test").read_text()


def test_the_readmes_chat_command_works_as_written(served):
    base, _, env = served
    line = next(line for line in README.splitlines() if "scripts/chat" in line and not line.startswith("("))
    command = shlex.split(line, comments=True)
    assert command[0] == "./scripts/chat", line
    token = httpx.post(f"{base}/api/tokens", json={"name": "readme"}).json()["token"]
    done = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300,
                          env={**env, "SWITCHBOARD_URL": base, "SWITCHBOARD_TOKEN": token})  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip(), done.stderr  # the demo model's answer
    assert "conversation: " in done.stderr
