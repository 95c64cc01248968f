"""Bundled stdio servers forked from one pre-imported parent instead of each started afresh.

Each bundled server (a Python script under `backend/mcp/`, run by the app's interpreter) would
spend about a second of CPU importing fastmcp before it reads its first message. `Zygote` runs
`_zygote.py` once, which imports fastmcp and then forks one child per server on request. A
child is what `python main.py` in the server's folder would be: its own process group, the
server's minimal environment and working directory, its stderr in the server's log, stdin and
stdout pipes to the app. `ForkedProcess` is that child as an `anyio.abc.Process`, so the stdio
reader, the shutdown sequence (close stdin, SIGTERM then SIGKILL to its process group) and
restarts are the same as for a process the app spawned itself. Its exit status comes from the
zygote (the child's parent) over the control socket.

Third-party servers (npx, uvx, other interpreters, scripts outside `backend/mcp/`) are started
as before. When the zygote cannot start or answer, `spawn` returns None and the caller starts
the process itself. Linux only (it needs `pidfd_open` and descriptor passing).

This module imports neither fastmcp nor the MCP SDK, so it can run before they load.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any, TextIO

import anyio
import anyio.lowlevel
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

__all__ = ["ForkedProcess", "Zygote", "forkable"]

log = logging.getLogger("switchboard.tools")

_SCRIPT = Path(__file__).with_name("_zygote.py")
READY_TIMEOUT_S = 30.0  # the zygote's imports; past this, servers start on their own


def forkable(command: str, args: tuple[str, ...], cwd: Path, project_root: Path) -> bool:
    """Whether `command args` run in `cwd` is a bundled server the zygote can fork: the app's
    own interpreter running a script (no interpreter options) under the project's `backend/mcp/`."""
    if sys.platform != "linux" or not hasattr(os, "pidfd_open") or command != sys.executable:
        return False
    if not args or not args[0].endswith(".py"):
        return False
    script = (cwd / args[0]).resolve()
    return script.is_file() and script.is_relative_to((project_root / "backend" / "mcp").resolve())


class Zygote:
    """The running `_zygote.py` and its control socket."""

    def __init__(self, env: dict[str, str], log_file: Path) -> None:
        self._env = env  # the minimal inherited environment: the zygote gets no secrets either
        self._log_file = log_file
        self._process: asyncio.subprocess.Process | None = None
        self._control: socket.socket | None = None
        self._reader: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[bool] | None = None
        self._answers: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._lock = asyncio.Lock()
        self._children: dict[int, ForkedProcess] = {}

    async def start(self) -> None:
        """Start the zygote; it becomes ready (its imports done) in the background."""
        loop = asyncio.get_running_loop()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._ready = loop.create_future()
        try:
            self._log_file.parent.mkdir(parents=True, exist_ok=True)
            with self._log_file.open("w", encoding="utf-8") as errlog:
                self._process = await asyncio.create_subprocess_exec(
                    sys.executable,
                    str(_SCRIPT),
                    str(theirs.fileno()),
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.DEVNULL,
                    stderr=errlog,
                    pass_fds=(theirs.fileno(),),
                    env=self._env,
                    start_new_session=True,
                )
        except OSError:
            ours.close()
            self._ready.set_result(False)
            raise
        finally:
            theirs.close()
        ours.setblocking(False)
        self._control = ours
        self._reader = asyncio.create_task(self._read(), name="mcp-zygote")

    async def spawn(self, argv: list[str], cwd: Path, env: dict[str, str], errlog: TextIO) -> ForkedProcess | None:
        """A child running `argv` (interpreter, script, arguments) in `cwd` with exactly `env`, its
        stderr to `errlog`; None when the zygote cannot make one (the caller then starts the
        process itself)."""
        if self._ready is None or self._control is None:
            return None
        try:
            if not await asyncio.wait_for(asyncio.shield(self._ready), READY_TIMEOUT_S):
                return None
        except TimeoutError:
            return None
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        env_r = _environment_pipe(env)  # read by the child alone: the parent never holds a server's variables
        request = {"argv": argv, "cwd": str(cwd)}
        try:
            async with self._lock:  # one request in flight: answers come in order
                socket.send_fds(
                    self._control, [json.dumps(request).encode()], [stdin_r, stdout_w, errlog.fileno(), env_r]
                )
                answer = await asyncio.wait_for(self._answers.get(), READY_TIMEOUT_S)
        except (OSError, TimeoutError) as exc:
            log.warning("the bundled servers' parent did not fork a server: %s", exc)
            answer = {"error": str(exc)}
        finally:
            for fd in (stdin_r, stdout_w, env_r):
                os.close(fd)
        if "pid" not in answer:
            os.close(stdin_w)
            os.close(stdout_r)
            return None
        child = ForkedProcess(answer["pid"], await _PipeSend.open(stdin_w), await _PipeReceive.open(stdout_r))
        self._children[child.pid] = child
        return child

    async def _read(self) -> None:
        assert self._control is not None and self._ready is not None
        loop = asyncio.get_running_loop()
        try:
            while data := await loop.sock_recv(self._control, 65536):
                message = json.loads(data)
                if "ready" in message:
                    self._ready.set_result(True)
                elif "exit" in message:
                    child = self._children.pop(message["exit"], None)
                    if child is not None:
                        child.ended(message["code"])
                else:
                    self._answers.put_nowait(message)
        except OSError:
            pass
        finally:
            if not self._ready.done():
                self._ready.set_result(False)
                log.warning(
                    "the bundled servers' parent stopped before it was ready; they start on their own (see %s)",
                    self._log_file,
                )
            self._answers.put_nowait({"error": "the bundled servers' parent stopped"})
            for child in self._children.values():  # their parent is gone: nobody reports their end
                child.ended(-signal.SIGKILL)
            self._children.clear()

    async def close(self) -> None:
        """Stop the zygote; children still running are stopped by it (SIGTERM, then SIGKILL)."""
        if self._control is not None:
            # shutdown, not only close: the event loop may hold the descriptor open a while longer
            # (uvloop's poll handle does), and the zygote stops only when it reads the end.
            with contextlib.suppress(OSError):
                self._control.shutdown(socket.SHUT_RDWR)
            self._control.close()
            self._control = None
        if self._process is not None:
            try:
                await asyncio.wait_for(self._process.wait(), 5.0)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    self._process.kill()
                await self._process.wait()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader


def _environment_pipe(env: dict[str, str]) -> int:
    """The read end of a pipe that holds `env` as JSON (written whole; a pipe holds 64 KiB)."""
    data = json.dumps(env).encode()
    read, write = os.pipe()
    try:
        if len(data) > 65536:  # more than a pipe holds unread: grow it (Linux), or refuse
            fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, len(data))
        os.write(write, data)
    except OSError:
        os.close(read)
        raise
    finally:
        os.close(write)
    return read


class ForkedProcess(Process):
    """A server forked by the zygote, seen as a process the app started itself."""

    def __init__(self, pid: int, stdin: ByteSendStream, stdout: ByteReceiveStream) -> None:
        self._pid = pid
        self._stdin = stdin
        self._stdout = stdout
        self._returncode: int | None = None
        self._exited = asyncio.Event()

    def ended(self, code: int) -> None:
        if self._returncode is None:
            self._returncode = code
        self._exited.set()

    async def wait(self) -> int:
        await self._exited.wait()
        assert self._returncode is not None
        return self._returncode

    def send_signal(self, sig: signal.Signals) -> None:
        if self._returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    async def aclose(self) -> None:
        await self._stdin.aclose()
        await self._stdout.aclose()
        await self.wait()

    @property
    def pid(self) -> int:
        return self._pid

    @property
    def returncode(self) -> int | None:
        return self._returncode

    @property
    def stdin(self) -> ByteSendStream:
        return self._stdin

    @property
    def stdout(self) -> ByteReceiveStream:
        return self._stdout

    @property
    def stderr(self) -> None:
        return None  # it writes to the server's stderr log


class _PipeReceive(ByteReceiveStream):
    """The read end of a pipe on the event loop."""

    def __init__(self, reader: asyncio.StreamReader, transport: asyncio.ReadTransport) -> None:
        self._reader, self._transport, self._closed = reader, transport, False

    @classmethod
    async def open(cls, fd: int) -> _PipeReceive:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=1 << 16)
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb", 0)
        )
        return cls(reader, transport)

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self._closed:
            raise anyio.ClosedResourceError
        data = await self._reader.read(max_bytes)
        if not data:
            if self._closed:
                raise anyio.ClosedResourceError
            raise anyio.EndOfStream
        return data

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            self._transport.close()
            self._reader.feed_eof()  # wakes a read in progress
        await anyio.lowlevel.checkpoint()


class _PipeSend(ByteSendStream):
    """The write end of a pipe on the event loop."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer, self._closed = writer, False

    @classmethod
    async def open(cls, fd: int) -> _PipeSend:
        loop = asyncio.get_running_loop()
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, os.fdopen(fd, "wb", 0))
        return cls(asyncio.StreamWriter(transport, protocol, None, loop))

    async def send(self, item: bytes) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        try:
            self._writer.write(item)
            await self._writer.drain()
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise anyio.BrokenResourceError from exc

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            self._writer.close()
        await anyio.lowlevel.checkpoint()
