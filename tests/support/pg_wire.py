"""A TCP relay in front of PostgreSQL that counts the client's round trips: each extended-protocol
Sync message and each simple Query ends one (the client then waits for ReadyForQuery). What a
store call costs on the wire, measured outside the app."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from sqlalchemy.engine import make_url

_UNTYPED = (80877103, 80877104)  # SSLRequest, GSSENCRequest: answered by one byte, then the startup


class Wire:
    def __init__(self) -> None:
        self.round_trips = 0


class _ClientStream:
    def __init__(self, wire: Wire) -> None:
        self._wire = wire
        self._buffer = bytearray()
        self._started = False

    def feed(self, data: bytes) -> None:
        buf = self._buffer
        buf += data
        while True:
            if not self._started:  # length, code: the startup message (or a request before it)
                if len(buf) < 8 or len(buf) < int.from_bytes(buf[:4], "big"):
                    return
                code = int.from_bytes(buf[4:8], "big")
                del buf[: int.from_bytes(buf[:4], "big")]
                self._started = code not in _UNTYPED
                continue
            if len(buf) < 5 or len(buf) < 1 + int.from_bytes(buf[1:5], "big"):
                return
            if buf[0] in b"SQ":
                self._wire.round_trips += 1
            del buf[: 1 + int.from_bytes(buf[1:5], "big")]


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, stream: _ClientStream | None) -> None:
    try:
        while data := await reader.read(65536):
            if stream is not None:
                stream.feed(data)
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


@contextlib.asynccontextmanager
async def counting_relay(url: str) -> AsyncIterator[tuple[str, Wire]]:
    """(`url` through the relay, its count), on the running event loop."""
    target = make_url(url)
    wire = Wire()
    tasks: set[asyncio.Task[None]] = set()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(target.host, target.port)
        for task in (_pipe(reader, up_writer, _ClientStream(wire)), _pipe(up_reader, writer, None)):
            tasks.add(spawned := asyncio.create_task(task))
            spawned.add_done_callback(tasks.discard)

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield target.set(host="127.0.0.1", port=port).render_as_string(hide_password=False), wire
    finally:
        server.close()
        for task in list(tasks):
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await server.wait_closed()
