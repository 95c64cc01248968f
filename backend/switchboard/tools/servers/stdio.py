"""The stdio pipe to an MCP server: the SDK's `stdio_client`, with a reader that
survives what real servers write.

The SDK's reader (mcp 2.3) has two faults that the fault tests hit:

* it decodes stdout strictly, so one byte that is not UTF-8 kills the reader and
  leaves the calls in flight waiting for their timeout;
* it joins and re-splits the whole pending text for every 64 KiB read, so one
  20 MB line (a large tool result) costs ~25 s of the app's CPU, during which every
  other user waits.

This module keeps the SDK's process handling (spawn in its own process group, the
spec's shutdown sequence, bounded waits; its helpers are reused, not copied) and
replaces the reader: bytes are split into lines in linear time and each line is
decoded on its own with undecodable bytes replaced, so a garbled line fails to parse
as JSON-RPC (the SDK logs it) and the next one is read as usual.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TextIO

import anyio
import anyio.lowlevel
from mcp.client import stdio as sdk
from mcp.client.stdio import StdioServerParameters
from mcp.shared.message import SessionMessage

from .launch import child_environment

__all__ = ["LineSplitter", "ProcessEnd", "ServerExited", "last_lines", "stderr_tail", "stdio_streams"]

log = logging.getLogger(__name__)


def stderr_tail(path: Path, limit: int = 2000) -> str | None:
    """The end of a server's stderr log (at most `limit` bytes), or None when there is none."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - limit))
            text = handle.read().decode("utf-8", "replace").strip()
    except OSError:
        return None
    return text or None


def last_lines(text: str | None, count: int = 3, limit: int = 300) -> str:
    """The last non-empty lines of `text` on one line, " | " between them, cut at `limit`."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()][-count:]
    joined = " | ".join(lines)
    return joined if len(joined) <= limit else "…" + joined[-limit:]


STOP_GRACE_S = 0.5  # after stdin closes, how long a server may take to exit before SIGTERM


async def _stop_process(process: sdk.ServerProcess) -> None:
    """The SDK's shutdown sequence (close stdin, wait, terminate the process group, reap), with a
    grace of STOP_GRACE_S instead of the SDK's 2 s: a server exits on end of input at once or
    is sent SIGTERM, which it may handle too, so that stopping the app (Ctrl-C) is quick."""
    assert process.stdin is not None and process.stdout is not None
    await sdk._close_pipe(process.stdin)
    if not await sdk._wait_for_process_exit(process, STOP_GRACE_S):
        await sdk._terminate_process_tree(process)
        if not await sdk._wait_for_process_exit(process, sdk._KILL_REAP_TIMEOUT):
            log.warning("MCP server process %d is still alive after SIGKILL; abandoning it", process.pid)
    sdk.close_process_job(process)  # Windows job members; nothing on POSIX
    await sdk._close_pipe(process.stdout)
    sdk._close_subprocess_transport(process)


class ProcessEnd:
    """How a server process ended, when it ended on its own (its stdout closed before the host
    stopped it): `code` is its exit status (negative: the signal that killed it)."""

    def __init__(self) -> None:
        self.code: int | None = None


class ServerExited(Exception):
    """The server process exited by itself; raised from the failure it caused."""

    def __init__(self, code: int, log_file: str) -> None:
        super().__init__(f"exited with code {code}")
        self.code, self.log_file = code, log_file


class LineSplitter:
    """Newline-delimited lines from a byte stream, in time linear in its length."""

    def __init__(self) -> None:
        self._pending: list[bytes] = []

    def feed(self, data: bytes) -> Iterator[bytes]:
        start = 0
        while (end := data.find(b"\n", start)) != -1:
            piece = data[start:end]
            if self._pending:
                self._pending.append(piece)
                piece = b"".join(self._pending)
                self._pending.clear()
            yield piece
            start = end + 1
        if start < len(data):
            self._pending.append(data[start:])


@asynccontextmanager
async def stdio_streams(
    server: StdioServerParameters,
    errlog: TextIO,
    process: sdk.ServerProcess | None = None,
    ended: ProcessEnd | None = None,
) -> AsyncIterator[
    tuple[anyio.abc.ObjectReceiveStream[SessionMessage | Exception], anyio.abc.ObjectSendStream[SessionMessage]]
]:
    """Spawn the server (or use `process`, already spawned for it) and yield (read stream,
    write stream) for a ClientSession. `ended` learns the exit status of a process that ended
    by itself (known once the context has exited)."""
    if process is None:
        command = await sdk._get_executable_command(server.command)
        process = await sdk._create_platform_compatible_process(
            command=command,
            args=server.args,
            env=child_environment(server.env),
            errlog=errlog,
            cwd=server.cwd,
        )
    # No awaits from here until the task group is entered, or a cancellation
    # delivered in the gap would leak the live process.
    read_stream_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_stream_reader = anyio.create_memory_object_stream[SessionMessage](0)
    shutting_down = False
    closed_by_server = False  # its stdout ended before the host began to stop it
    writer_done = anyio.Event()

    async def stdout_reader() -> None:
        assert process.stdout is not None
        lines = LineSplitter()
        try:
            async with read_stream_writer:
                try:
                    while True:
                        try:
                            data = await process.stdout.receive()
                        except anyio.EndOfStream:
                            nonlocal closed_by_server
                            closed_by_server = not shutting_down
                            return
                        for line in lines.feed(data):
                            text = line.decode(server.encoding, errors="replace")
                            if not text.strip():
                                continue
                            try:
                                await read_stream_writer.send(sdk._parse_line(text))
                            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                                return  # the session is gone
                finally:
                    await sdk._drain_stdout(process)
        except anyio.ClosedResourceError:
            pass  # our own shutdown closed stdout under the read
        except (anyio.BrokenResourceError, ConnectionError):
            if not shutting_down:
                log.exception("reading an MCP server's stdout failed mid-session")

    async def stdin_writer() -> None:
        assert process.stdin is not None
        try:
            async with write_stream_reader:
                async for message in write_stream_reader:
                    payload = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send((payload + "\n").encode(server.encoding, errors="replace"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            # The server may still be alive: end the session instead of leaving a request hanging.
            await read_stream_writer.aclose()
        finally:
            writer_done.set()

    async def shutdown() -> None:
        read_stream.close()
        write_stream.close()
        with anyio.move_on_after(sdk._WRITER_FLUSH_TIMEOUT):
            await writer_done.wait()
        await _stop_process(process)
        if ended is not None and closed_by_server:
            ended.code = process.returncode
        await sdk._aclose_all(read_stream, write_stream, read_stream_writer, write_stream_reader)
        await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg:
        tg.start_soon(stdout_reader)
        tg.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            shutting_down = True
            with anyio.CancelScope(shield=True):  # every wait inside is bounded
                await shutdown()
            tg.cancel_scope.cancel()
    await anyio.lowlevel.cancel_shielded_checkpoint()
