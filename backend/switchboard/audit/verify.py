"""Checking the chain: every record's hash is the hash of its body, its body says the seq and
`prev` its row says, each `prev` is the hash before it, no seq is missing, the filter columns
agree with the body, and every checkpoint is signed by the deployment's key and matches the
record at its seq (a chain cut back below a checkpoint is found there)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from ..store.governance.audit_log import AuditStore
from .chain import FILTER_FIELDS, GENESIS
from .keys import signed_by

__all__ = ["Verdict", "verify"]

PAGE = 20_000


@dataclass(frozen=True, slots=True)
class Verdict:
    ok: bool
    checked: int  # records checked
    checkpoints: int  # checkpoints checked
    bad_seq: int | None = None
    why: str = ""
    last_seq: int = 0


async def verify(audit: AuditStore, public_key: str, from_seq: int = 1) -> Verdict:
    """Whether the chain from `from_seq` on is whole; else the first seq where it is not."""
    boundary = await audit.pruned_through()
    checkpoints = {cp.seq: cp for cp in await audit.checkpoints(max(from_seq - 1, 0))}
    start = max(from_seq, boundary + 1)
    for cp in checkpoints.values():
        if cp.public_key != public_key or not signed_by(public_key, cp.signature, cp.seq, cp.hash, cp.ts):
            return Verdict(False, 0, 0, cp.seq, "its checkpoint is not signed by this deployment's key")
    if start == 1:
        prev: str | None = GENESIS
    elif start - 1 == boundary and boundary:
        kept = checkpoints.get(boundary)
        if kept is None:
            return Verdict(False, 0, 0, start, "the records before it were pruned without a checkpoint")
        prev = kept.hash
    else:
        prev = await audit.hash_at(start - 1)  # trusted as the starting point (`--from`)
        if prev is None:
            return Verdict(False, 0, 0, start - 1, "the record before --from is missing")
    expected, checked = start, 0
    after = start - 1
    while True:
        rows = await audit.page(after, PAGE)
        for seq, row_prev, row_hash, *columns, body in rows:
            why = _fault(seq, expected, row_prev, row_hash, columns, body, prev)
            if why is None and seq in checkpoints and checkpoints[seq].hash != row_hash:
                why = "it differs from the signed checkpoint at its seq"
            if why is not None:
                return Verdict(False, checked, len(checkpoints), min(seq, expected), why)
            prev, expected, checked = row_hash, expected + 1, checked + 1
        if len(rows) < PAGE:
            break
        after = rows[-1][0]
    last = expected - 1
    beyond = [seq for seq in checkpoints if seq > last]
    if beyond:
        return Verdict(
            False,
            checked,
            len(checkpoints),
            last + 1,
            f"a checkpoint vouches for records up to {max(beyond)}; the log ends at {last}",
            last,
        )
    return Verdict(True, checked, len(checkpoints), last_seq=last)


def _fault(
    seq: int, expected: int, row_prev: str, row_hash: str, columns: list[object], body: str, prev: str | None
) -> str | None:
    if seq != expected:
        return f"record {expected} is missing"
    if hashlib.sha256(body.encode()).hexdigest() != row_hash:
        return "its body does not match its hash (edited)"
    try:
        record = json.loads(body)
    except ValueError:
        return "its body is not JSON"
    if record.get("seq") != seq or record.get("prev") != row_prev:
        return "its body belongs elsewhere in the chain (moved or reordered)"
    if row_prev != prev:
        return "it does not follow the record before it (a record was removed, changed or reordered)"
    if [record.get(name) for name in FILTER_FIELDS] != columns:
        return "its columns differ from its body (edited)"
    return None
