"""Processes the host meets across a restart: `switchboard serve` itself, stopped and started
again on the same port and data dir (a real restart, as a browser or a remote MCP server sees
it), and the task server over HTTP, which goes on meanwhile."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from .harness import PROJECT_ROOT, free_port, wait_for_port, wait_ready

__all__ = ["TASKER", "ServeConsole", "ServeProcess", "serve_env", "tasker_http"]

TASKER = PROJECT_ROOT / "tests" / "support" / "servers" / "tasker.py"


@contextmanager
def tasker_http(port: int) -> Iterator[subprocess.Popen[bytes]]:
    """The task server on 127.0.0.1:`port` (stateless streamable HTTP, path /mcp)."""
    proc = subprocess.Popen(
        [sys.executable, str(TASKER), "--http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for_port(port, proc, "tasker --http")
        yield proc
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def serve_env(tmp: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment with the app's folders under `tmp` (defaults/, overrides/, data/, logs/)."""
    return {
        **os.environ,
        "SWITCHBOARD_DEFAULTS_DIR": str(tmp / "defaults"),
        "SWITCHBOARD_CONFIG_DIR": str(tmp / "overrides"),
        "SWITCHBOARD_DATA_DIR": str(tmp / "data"),
        "SWITCHBOARD_LOG_DIR": str(tmp / "logs"),
        **(env or {}),
    }


class ServeConsole:
    """A real `switchboard serve` process on the config folders under `tmp` (defaults/,
    overrides/, data/, logs/), its stderr read line by line in a thread."""

    def __init__(self, tmp: Path, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "switchboard", "serve", "--port", str(self.port)],
            env=serve_env(tmp, env),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        assert self.proc.stderr is not None
        stderr = self.proc.stderr
        threading.Thread(target=lambda: [self._lines.put(line.rstrip("\n")) for line in stderr], daemon=True).start()

    def until_settled(self, timeout_s: float = 90.0) -> list[str]:
        """The lines up to the one that says every server has settled (`servers: ...`)."""
        deadline = time.monotonic() + timeout_s
        while not any(line.startswith("servers:") for line in self.seen) and time.monotonic() < deadline:
            try:
                self.seen.append(self._lines.get(timeout=1))
            except queue.Empty:
                assert self.proc.poll() is None, self.seen
        return self.seen

    def rest(self) -> list[str]:
        """Every line, once the process has ended."""
        time.sleep(0.2)
        while not self._lines.empty():
            self.seen.append(self._lines.get())
        return self.seen


class ServeProcess:
    """The config must already be in `tmp/defaults`; `env` adds to the process's environment."""

    def __init__(self, tmp: Path, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = serve_env(tmp, env)
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> float:
        """Start, and return the moment the app has loaded (/healthz without `"app": "loading"`)."""
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "switchboard", "serve", "--port", str(self.port)],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, "switchboard serve exited"
            try:
                health = httpx.get(f"{self.url}/healthz", timeout=1)
                if health.status_code == 200 and "app" not in health.json():
                    return time.monotonic()
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise RuntimeError("switchboard serve did not answer")

    def wait_ready(self, timeout_s: float = 60) -> None:
        """Until every configured MCP server is ready (/readyz 200)."""
        wait_ready(self.url, timeout_s, lambda: f"servers not ready: {httpx.get(f'{self.url}/readyz', timeout=5).text}")

    def stop(self) -> None:
        """SIGTERM, as a service manager stops it: the app shuts down in order."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)
