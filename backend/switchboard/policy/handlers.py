"""The handlers a hook can have: a command (a subprocess, no shell), an HTTP policy service, and
Cedar policies (cedar.py). Each takes the event and returns a Decision or raises HookFailure."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import ssl
from collections.abc import Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any, Protocol

import httpx

from .decisions import Decision, HookFailure, parse_decision

__all__ = ["CommandHandler", "Handler", "HttpHandler", "hook_environment"]

MAX_ANSWER_BYTES = 1_000_000
# What a command hook inherits: enough to run a program, never the app's secrets.
_INHERITED = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "SSL_CERT_FILE", "SSL_CERT_DIR")


class Handler(Protocol):
    async def decide(self, event: dict[str, Any], point: str) -> Decision: ...


def hook_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    environ = os.environ if environ is None else environ
    return {key: environ[key] for key in _INHERITED if key in environ}


class CommandHandler:
    """The event as JSON on stdin; the decision as JSON on stdout (nothing: allow); exit 2 means
    deny (the reason: stdout's `reason`, else stderr); any other exit status is a crash."""

    def __init__(self, argv: tuple[str, ...], cwd: Path, timeout_s: float) -> None:
        self.argv, self.cwd, self.timeout_s = argv, cwd, timeout_s

    async def decide(self, event: dict[str, Any], point: str) -> Decision:
        try:
            process = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=self.cwd,
                env=hook_environment(),
                start_new_session=True,  # its own process group: a timeout stops its children too
            )
        except OSError as exc:
            raise HookFailure(f"could not start: {exc.strerror or exc}") from None
        try:
            out, err = await asyncio.wait_for(process.communicate(json.dumps(event).encode()), self.timeout_s)
        except TimeoutError:
            await _stop(process)
            raise HookFailure(f"gave no answer within {self.timeout_s:g} s") from None
        except BaseException:
            await _stop(process)
            raise
        if len(out) > MAX_ANSWER_BYTES:
            raise HookFailure("its answer is larger than 1 MB")
        if process.returncode == 2:
            reason = _json_reason(out) or err.decode(errors="replace").strip()[:1000] or None
            return Decision("deny", reason)
        if process.returncode != 0:
            tail = err.decode(errors="replace").strip()[-300:]
            raise HookFailure(f"exited with status {process.returncode}" + (f": {tail}" if tail else ""))
        if not out.strip():
            return Decision("allow")
        try:
            data = json.loads(out)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise HookFailure("its answer is not JSON") from None
        return parse_decision(data, point)


def _json_reason(out: bytes) -> str | None:
    with suppress(ValueError, TypeError):
        data = json.loads(out)
        if isinstance(data, dict) and isinstance(data.get("reason"), str):
            return str(data["reason"]).strip()[:1000] or None
    return None


async def _stop(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        with suppress(ProcessLookupError):
            process.kill()
        await process.wait()


class HttpHandler:
    """The event POSTed as JSON to the configured address; a 2xx answer with the decision (an
    empty answer: allow). Redirects are not followed; the proxy variables are not used."""

    def __init__(self, url: str, timeout_s: float) -> None:
        self.url, self.timeout_s = url, timeout_s
        self._tls: ssl.SSLContext | None = None  # made once: building one costs tens of ms of CPU

    async def decide(self, event: dict[str, Any], point: str) -> Decision:
        if self._tls is None:
            self._tls = ssl.create_default_context()
        try:
            async with httpx.AsyncClient(
                timeout=self.timeout_s, follow_redirects=False, trust_env=False, verify=self._tls
            ) as client:
                response = await asyncio.wait_for(client.post(self.url, json=event), self.timeout_s)
        except TimeoutError:
            raise HookFailure(f"gave no answer within {self.timeout_s:g} s") from None
        except httpx.HTTPError as exc:
            raise HookFailure(f"could not be reached: {type(exc).__name__}") from None
        if not 200 <= response.status_code < 300:
            raise HookFailure(f"answered HTTP {response.status_code}")
        if not response.content.strip():
            return Decision("allow")
        if len(response.content) > MAX_ANSWER_BYTES:
            raise HookFailure("its answer is larger than 1 MB")
        try:
            data = response.json()
        except ValueError:
            raise HookFailure("its answer is not JSON") from None
        if isinstance(data, dict) and "decision" not in data and isinstance(data.get("result"), dict):
            data = data["result"]  # an OPA-style answer: {"result": {"decision": ...}}
        return parse_decision(data, point)
