"""The app's audit writer: records wait while the store is down and are written, in order, once
it is back (a tool call's record is never lost for a store outage); a checkpoint is signed on a
timer and when the writer closes."""

from __future__ import annotations

import asyncio

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from switchboard.audit.keys import public_text
from switchboard.audit.verify import verify
from switchboard.audit.writer import Auditor, AuditSettings
from switchboard.errors import StoreUnavailable
from switchboard.store import down_store, open_store
from switchboard.store.governance.audit_log import AuditStore

KEY = Ed25519PrivateKey.generate()


async def test_records_wait_for_a_store_that_is_down_and_are_written_in_order(tmp_path):
    url = f"sqlite+aiosqlite:///{tmp_path}/audit.db"
    auditor = Auditor(KEY)
    auditor.use(AuditStore(down_store(url, StoreUnavailable("the database is down")), KEY))
    auditor.start()
    for i in range(5):
        auditor.record("tool_call", user="ann@example.com", tool="probe_echo", decision="allow", n=i)
    await auditor.flush(timeout_s=0.5)  # nothing can be written yet
    store = await open_store(url)
    try:
        audit = AuditStore(store, KEY)
        assert await audit.page(0, 10) == []
        auditor.use(audit)
        for _ in range(100):
            await asyncio.sleep(0.05)
            if len(await audit.page(0, 10)) == 5:
                break
        await auditor.close()
        rows = await audit.page(0, 10)
        assert [f'"n":{i}' in row[-1] for i, row in enumerate(rows)] == [True] * 5
        verdict = await verify(audit, public_text(KEY))
        assert verdict.ok and verdict.checked == 5 and verdict.checkpoints == 1  # signed when it closed
    finally:
        await store.close()


async def test_a_checkpoint_is_signed_on_the_timer(tmp_path):
    store = await open_store(f"sqlite+aiosqlite:///{tmp_path}/audit.db")
    try:
        audit = AuditStore(store, KEY)
        auditor = Auditor(KEY, AuditSettings(checkpoint_interval_s=0.2))
        auditor.use(audit)
        auditor.start()
        auditor.record("config_reload", servers={}, errors=[])
        await auditor.flush()
        for _ in range(100):
            if await audit.checkpoints():
                break
            await asyncio.sleep(0.05)
        assert [cp.seq for cp in await audit.checkpoints()] == [1]
        await auditor.close()
        assert [cp.seq for cp in await audit.checkpoints()] == [1]  # nothing new: no second one
    finally:
        await store.close()
