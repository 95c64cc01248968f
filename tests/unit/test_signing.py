"""The key that signs file URLs (the URLs themselves: tests/integration/test_files.py)."""

from __future__ import annotations

import multiprocessing
import time

import pytest

from switchboard.files.signing import load_or_create_key


def _key_in_child(path, start, out):
    while time.time() < start:
        time.sleep(0.001)
    out.put(load_or_create_key(path).hex())


@pytest.mark.slow  # a process of its own
def test_processes_starting_together_agree_on_one_key(tmp_path):
    """Several app processes (uvicorn workers) create the key at the same moment."""
    path = tmp_path / "data" / "secret.key"
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    start = time.time() + 2
    procs = [ctx.Process(target=_key_in_child, args=(path, start, out)) for _ in range(6)]
    for proc in procs:
        proc.start()
    keys = {out.get(timeout=30) for _ in procs}
    for proc in procs:
        proc.join(30)
    assert len(keys) == 1 and bytes.fromhex(keys.pop()) == load_or_create_key(path)
    assert [p.name for p in path.parent.iterdir()] == ["secret.key"], "no temporary files left"
    assert path.stat().st_mode & 0o777 == 0o600


def test_a_damaged_key_file_is_an_error_that_says_what_to_do(tmp_path):
    path = tmp_path / "secret.key"
    path.write_text("not hex")
    with pytest.raises(ValueError, match="does not hold a hex key: delete it"):
        load_or_create_key(path)
