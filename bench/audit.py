"""What the audit log costs (docs/audit.md; docs/benchmarks.md "The audit log").

1. Per tool turn: the real `Auditor` writes one tool-call record per turn, with the turn waiting
   for it (`flush`, the worst case: no batching with other turns), on a SQLite file and on a
   PostgreSQL cluster (fsync on). The CPU of the whole process (every thread) per turn, p50 and
   p90, and the time `record()` itself takes on the turn's path (what a turn really waits for:
   the write happens behind it).
2. `verify` of N records (default 1,000,000) on a SQLite file, records written through
   `AuditStore.append` in batches, a checkpoint every 1,000.

    uv run python bench/audit.py [--turns 2000] [--records 1000000] [--no-postgres] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

import _support as S  # noqa: F401  (puts the project root on sys.path)
from switchboard.audit.chain import arguments_digest, now_ts
from switchboard.audit.keys import public_text
from switchboard.audit.verify import verify
from switchboard.audit.writer import Auditor
from switchboard.store import open_store
from switchboard.store.governance.audit_log import AuditStore, Pending

KEY = Ed25519PrivateKey.generate()
ARGUMENTS = {"query": "quarterly revenue by region", "limit": 50, "filters": {"region": ["EU", "US"], "year": 2026}}


def _fields(i: int) -> dict[str, Any]:
    return {
        "user": f"user{i % 50}@example.com",
        "conversation_id": f"c{i // 5:08d}",
        "call_id": f"call_{i:08d}",
        "server": "warehouse",
        "tool": "warehouse_query",
        "pin": "9" * 64,
        "hooks": [],
        "decision": "allow",
        "approval": {"answer": "approve", "edited": False, "by": f"user{i % 50}@example.com"},
        "outcome": {"ok": True},
        "duration_ms": 42,
    }


async def per_turn(url: str, turns: int) -> dict[str, float]:
    store = await open_store(url)
    auditor = Auditor(KEY)
    auditor.use(AuditStore(store, KEY))
    auditor.start()
    cpu, on_path = [], []
    try:
        for i in range(turns + 50):
            c0 = time.process_time()
            w0 = time.perf_counter()
            auditor.record("tool_call", arguments_sha256=arguments_digest(ARGUMENTS), **_fields(i))
            w1 = time.perf_counter()
            await auditor.flush()
            c1 = time.process_time()
            if i >= 50:  # warm-up
                cpu.append((c1 - c0) * 1000)
                on_path.append((w1 - w0) * 1000)
    finally:
        await auditor.close()
        await store.close()
    return {
        "cpu_ms_p50": statistics.median(cpu),
        "cpu_ms_p90": statistics.quantiles(cpu, n=10)[-1],
        "record_call_ms_p50": statistics.median(on_path),
    }


async def verify_many(url: str, records: int) -> dict[str, float]:
    store = await open_store(url)
    audit = AuditStore(store, KEY)
    try:
        t0 = time.perf_counter()
        batch = 10_000
        for start in range(0, records, batch):
            ts = now_ts()
            await audit.append(
                [
                    Pending(ts, {"kind": "tool_call", "arguments_sha256": "0" * 64, **_fields(i)})
                    for i in range(start, min(records, start + batch))
                ]
            )
        written = time.perf_counter() - t0
        t0, c0 = time.perf_counter(), time.process_time()
        verdict = await verify(audit, public_text(KEY))
        took, cpu = time.perf_counter() - t0, time.process_time() - c0
        assert verdict.ok and verdict.checked == records, verdict
    finally:
        await store.close()
    return {
        "records": records,
        "write_s": written,
        "verify_s": took,
        "verify_cpu_s": cpu,  # every thread's CPU: the wall time on a machine nobody else uses
        "checkpoints": verdict.checkpoints,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        results["sqlite_turn"] = asyncio.run(per_turn(f"sqlite+aiosqlite:///{tmp}/turns.db", args.turns))
        if not args.no_postgres:
            from tests.support.postgres import PostgresCluster, find_bin_dir

            bin_dir = find_bin_dir()
            if bin_dir is not None:
                cluster = PostgresCluster(bin_dir, durable=True)
                cluster.start()
                try:
                    results["postgres_turn"] = asyncio.run(per_turn(cluster.create_database(), args.turns))
                finally:
                    cluster.stop()
        results["sqlite_verify"] = asyncio.run(verify_many(f"sqlite+aiosqlite:///{Path(tmp)}/many.db", args.records))
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for name, figures in results.items():
            print(
                f"{name:15s} "
                + "  ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in figures.items())
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
