"""Two app processes append to one audit chain on a real PostgreSQL at the same time: the
advisory lock serializes their appends, and the chain they make together verifies whole."""

from __future__ import annotations

import asyncio
import base64
import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest

from switchboard.audit.keys import load_key, public_text
from switchboard.audit.verify import verify
from switchboard.store import open_store
from switchboard.store.governance.audit_log import AuditStore

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

SEED = base64.b64encode(bytes(range(32))).decode()
WRITER = """
import asyncio, sys
from pathlib import Path
from switchboard.audit.keys import load_key
from switchboard.audit.writer import AuditSettings, Auditor
from switchboard.store import open_store
from switchboard.store.governance.audit_log import AuditStore

async def main(url, name, seed, barrier):
    store = await open_store(url)
    key = load_key(seed, Path(barrier))
    (Path(barrier) / name).touch()
    while len(list(Path(barrier).iterdir())) < 2:  # both processes start appending together
        await asyncio.sleep(0.01)
    auditor = Auditor(key, AuditSettings(checkpoint_every=50))
    auditor.use(AuditStore(store, key, checkpoint_every=50))
    auditor.start()
    for i in range(300):
        auditor.record("tool_call", user=name, tool="probe_echo", decision="allow", n=i)
        await auditor.flush()
    await auditor.close()
    await store.close()

asyncio.run(main(*sys.argv[1:5]))
"""


def test_two_processes_append_to_one_chain(postgres_url, tmp_path):
    asyncio.run(_migrated(postgres_url))
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, postgres_url, f"p{i}@example.com", SEED, str(barrier)],
            env=env,
            stderr=subprocess.PIPE,
        )
        for i in range(2)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err.decode()[-2000:]
        assert "could not be written" not in err.decode(), "an append collided with the other process's"
    asyncio.run(_check(postgres_url))


async def _migrated(url: str) -> None:
    store = await open_store(url)
    await store.close()


async def _check(url: str) -> None:
    store = await open_store(url)
    try:
        audit = AuditStore(store, load_key(SEED, Path()))
        verdict = await verify(audit, public_text(load_key(SEED, Path())))
        assert verdict.ok and verdict.checked == 600, verdict
        rows = await audit.page(0, 1000)
        users = [row[4] for row in rows]
        assert users.count("p0@example.com") == users.count("p1@example.com") == 300
        switches = sum(1 for a, b in itertools.pairwise(users) if a != b)
        assert switches > 2, "the two processes' records interleave (they really ran at once)"
        assert len(await audit.checkpoints()) >= 600 // 50
    finally:
        await store.close()
