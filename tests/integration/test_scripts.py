"""The README's commands as a new user types them: `./scripts/serve` installs only what serving
needs (no test tools; the Docker image the same) and serves, the README's `./scripts/chat`
line then answers from that same environment, and the other scripts the docs give work where
uv is off PATH and install nothing more."""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
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
    env = {
        **os.environ,
        "UV_PROJECT_ENVIRONMENT": str(tmp / "venv"),
        "SWITCHBOARD_DEFAULTS_DIR": str(tmp / "defaults"),
        "SWITCHBOARD_CONFIG_DIR": str(tmp / "overrides"),
        "SWITCHBOARD_DATA_DIR": str(tmp / "data"),
        "SWITCHBOARD_LOG_DIR": str(tmp / "logs"),
        "VIRTUAL_ENV": "",
    }
    if uv:  # the uv that runs the tests, for the scripts too
        env["PATH"] = f"{Path(uv).parent}{os.pathsep}{env['PATH']}"
    port = free_port()
    proc = subprocess.Popen(
        ["./scripts/serve", "--port", str(port)],
        cwd=PROJECT_ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
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
    dev = [
        re.split(r"[<>=\[ ]", d, maxsplit=1)[0].replace("-", "_").lower() for d in groups["dev"] if isinstance(d, str)
    ]
    examples = [re.split(r"[<>=\[ ]", d, maxsplit=1)[0].replace("-", "_").lower() for d in groups["examples"]]
    for name in ("pytest", "playwright", "hypothesis", "mcp_server_git", "mcp_server_time"):
        assert name in dev + examples and name not in installed, name
    assert importlib.util.find_spec("pytest") is not None, "the tests' own environment has everything"


def test_the_image_and_the_serve_script_install_the_same():
    bootstrap = (PROJECT_ROOT / "scripts" / "bootstrap.sh").read_text()
    assert f"uv sync {SERVE_FLAGS}" in bootstrap
    assert "SWITCHBOARD_INSTALL=serve source" in (PROJECT_ROOT / "scripts" / "serve").read_text()
    syncs = re.findall(r"uv sync ([^\n\\&]*)", (PROJECT_ROOT / "Dockerfile").read_text())
    assert len(syncs) == 2 and all("--no-default-groups" in s and "--frozen" in s for s in syncs), syncs
    assert "--all-groups" in bootstrap and "SWITCHBOARD_INSTALL" not in (PROJECT_ROOT / "scripts" / "test").read_text()


def test_the_readmes_chat_command_works_as_written(served):
    base, _, env = served
    line = next(line for line in README.splitlines() if "scripts/chat" in line and not line.startswith("("))
    command = shlex.split(line, comments=True)
    assert command[0] == "./scripts/chat", line
    token = httpx.post(f"{base}/api/tokens", json={"name": "readme"}).json()["token"]
    done = subprocess.run(
        command,
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**env, "SWITCHBOARD_URL": base, "SWITCHBOARD_TOKEN": token},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip(), done.stderr  # the demo model's answer
    assert "conversation: " in done.stderr


def _uv_binary() -> Path:
    """The uv that runs the tests (`uv run` names itself in UV), else the one on PATH or in ~/.local/bin."""
    found = os.environ.get("UV") or shutil.which("uv") or shutil.which("uv", path=str(Path.home() / ".local" / "bin"))
    assert found, "uv is needed to run the scripts"
    return Path(found)


def _off_path_env(served_env: dict[str, str], tmp: Path, *, uv_in_home: bool) -> dict[str, str]:
    """A shell whose PATH has python3 and the system's tools but no uv, as on a fresh machine
    after `./scripts/serve` installed uv with `pip --user`; pip cannot reach an index, so a
    script that tries to install uv again fails."""
    bin_dir, home = tmp / "bin", tmp / "home"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(os.path.realpath(sys._base_executable))  # type: ignore[attr-defined]
    if uv_in_home:
        (home / ".local" / "bin").mkdir(parents=True)
        (home / ".local" / "bin" / "uv").symlink_to(_uv_binary())
    home.mkdir(exist_ok=True)
    cache = subprocess.run(
        [str(_uv_binary()), "cache", "dir"], capture_output=True, text=True, check=True
    ).stdout.strip()
    env = {k: v for k, v in served_env.items() if k not in ("UV", "PYTHONUSERBASE", "PYTHONPATH")}
    return env | {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": str(home),
        "UV_CACHE_DIR": cache,
        "PIP_NO_INDEX": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }


def test_the_docs_commands_work_with_uv_off_path_and_install_no_test_tools(served, tmp_path):
    _, venv, served_env = served
    env = _off_path_env(served_env, tmp_path, uv_in_home=True)
    before = sorted(p.name for p in _site_packages(venv).glob("*.dist-info"))
    check = subprocess.run(
        ["./scripts/switchboard", "check-config"],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert check.returncode == 0, check.stderr
    assert "uv not found" not in check.stderr and "0 error(s)" in check.stdout, check.stderr
    debug = subprocess.run(
        ["./scripts/debug_mcp_servers", "--json"],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert debug.returncode == 0, debug.stderr
    assert "uv not found" not in debug.stderr and '"servers"' in debug.stdout, debug.stderr
    version = subprocess.run(
        ["./scripts/uv", "--version"], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert version.returncode == 0 and version.stdout.startswith("uv "), version.stderr
    # A dev tool's wrapper installs nothing more into the serve-only environment.
    assert sorted(p.name for p in _site_packages(venv).glob("*.dist-info")) == before
    assert not any(name.startswith(("pytest", "mypy", "playwright")) for name in before)


def test_the_scripts_find_uv_where_pip_install_put_it_off_path(served, tmp_path):
    """`pip install uv` without --user (a prefix's bin/, off PATH): the `uv` package itself says
    where its binary is. The layout is pip's (`--prefix`), with the real package's code."""
    _, _, served_env = served
    python = os.path.realpath(sys._base_executable)  # type: ignore[attr-defined]  # the machine's, with its user site
    located = subprocess.run(
        [python, "-c", "import uv, os; print(os.path.dirname(uv.__file__))"], capture_output=True, text=True
    )
    if located.returncode != 0:
        pytest.skip("this machine's uv was not installed with pip: no `uv` package to find it with")
    env = _off_path_env(served_env, tmp_path, uv_in_home=False)
    site = tmp_path / "prefix" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    shutil.copytree(located.stdout.strip(), site / "uv")
    (tmp_path / "prefix" / "bin").mkdir()
    (tmp_path / "prefix" / "bin" / "uv").symlink_to(_uv_binary())
    env["PYTHONPATH"] = str(site)
    done = subprocess.run(
        ["./scripts/uv", "--version"], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout.startswith("uv "), done.stderr
    assert "uv not found" not in done.stderr


def test_every_script_the_docs_name_exists_and_no_user_doc_needs_uv_on_path():
    docs = [
        PROJECT_ROOT / "README.md",
        *(PROJECT_ROOT / "docs").glob("*.md"),
        *(PROJECT_ROOT / "config").rglob("README.md"),
    ]
    for path in docs:
        for name in re.findall(r"\./scripts/([\w.-]+)", path.read_text()):
            assert os.access(PROJECT_ROOT / "scripts" / name, os.X_OK), f"{path.name}: ./scripts/{name}"
    # What a new user reads (README and the config folders' READMEs) gives commands that work after
    # ./scripts/serve, where uv may be off PATH: `./scripts/...`, not a bare `uv run`/`uv sync`.
    for path in [PROJECT_ROOT / "README.md", *(PROJECT_ROOT / "config").rglob("README.md")]:
        bare = re.findall(r"(?<![\w/])uv (?:run|sync)\b[^\n`]*", path.read_text())
        assert not bare, f"{path.relative_to(PROJECT_ROOT)}: {bare}"
