"""The stdio reader's line splitting (tools/servers/stdio.py)."""

from __future__ import annotations

import itertools
import time

from hypothesis import given
from hypothesis import strategies as st

from switchboard.tools.servers.stdio import LineSplitter


def split_in_chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


@given(
    st.lists(st.binary(max_size=40).filter(lambda b: b"\n" not in b), max_size=12),
    st.lists(st.integers(0, 10_000)),
    st.booleans(),
)
def test_lines_come_out_whole_however_the_bytes_are_chunked(lines, cuts, trailing):
    data = b"\n".join(lines) + (b"\n" if trailing else b"")
    splitter = LineSplitter()
    out = [line for chunk in split_in_chunks(data, cuts) for line in splitter.feed(chunk)]
    complete = data.split(b"\n")[:-1]  # what follows the last newline is not a line yet
    assert out == complete


def test_a_20_mb_line_in_64_kib_reads_takes_linear_time():
    chunk = b"x" * 65536
    splitter = LineSplitter()
    started = time.process_time()
    for _ in range(320):  # 20 MiB
        assert list(splitter.feed(chunk)) == []
    (line,) = splitter.feed(b"\n")
    elapsed = time.process_time() - started
    assert len(line) == 320 * 65536
    # The SDK's reader needed ~25 s of CPU for this; a linear one needs milliseconds.
    assert elapsed < 1.0, elapsed
