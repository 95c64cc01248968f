"""A DNS server on 127.0.0.1 that answers A queries from a dict the test changes while it runs:
a stand-in for Docker's embedded DNS (127.0.0.11), whose answer for a service changes when a
container of it restarts with a new address."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

__all__ = ["DnsServer", "dns_server"]


@dataclass
class DnsServer:
    port: int
    answers: dict[str, list[str]] = field(default_factory=dict)  # name -> IPv4 addresses
    queries: list[str] = field(default_factory=list)


def _answer(query: bytes, server: DnsServer) -> bytes | None:
    if len(query) < 12:
        return None
    ident, _flags, qdcount = struct.unpack("!HHH", query[:6])
    if qdcount != 1:
        return None
    labels, pos = [], 12
    while pos < len(query) and (length := query[pos]) != 0:
        labels.append(query[pos + 1 : pos + 1 + length].decode("ascii", "replace"))
        pos += 1 + length
    question = query[12 : pos + 5]  # the name, its end and QTYPE, QCLASS
    qtype = struct.unpack("!H", query[pos + 1 : pos + 3])[0]
    name = ".".join(labels).lower()
    server.queries.append(name)
    addresses = server.answers.get(name)
    if addresses is None:
        return struct.pack("!HHHHHH", ident, 0x8183, 1, 0, 0, 0) + question  # NXDOMAIN
    records = (
        []
        if qtype != 1
        else [struct.pack("!HHHIH", 0xC00C, 1, 1, 1, 4) + socket.inet_aton(address) for address in addresses]
    )
    return struct.pack("!HHHHHH", ident, 0x8180, 1, len(records), 0, 0) + question + b"".join(records)


@contextmanager
def dns_server() -> Iterator[DnsServer]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(0.2)
    server = DnsServer(sock.getsockname()[1])
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                query, peer = sock.recvfrom(512)
            except TimeoutError:
                continue
            reply = _answer(query, server)
            if reply is not None:
                sock.sendto(reply, peer)

    thread = threading.Thread(target=serve, name="dns", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        stop.set()
        thread.join(5)
        sock.close()
