"""The chain's arithmetic, pure: a record's canonical JSON (RFC 8785) and its hash, the link
to the record before it, and the digest of a tool call's arguments. Nothing here touches a
database; `verify.py` and the store drive these functions alone."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import rfc8785

__all__ = ["FILTER_FIELDS", "GENESIS", "Sealed", "arguments_digest", "canonical", "now_ts", "seal"]

GENESIS = "0" * 64  # the `prev` of the first record of a deployment
FILTER_FIELDS = ("kind", "user", "server", "tool", "decision")  # repeated in columns for the filters


def canonical(value: Any) -> bytes:
    """RFC 8785 canonical JSON. For values without floats, with integers inside +-(2**53 - 1) and
    keys inside the Basic Multilingual Plane (every record the app writes), RFC 8785's form is
    exactly sorted keys, no spaces, UTF-8 and JSON.stringify's escapes, which the standard
    library writes some 50 times faster than `rfc8785` (a test holds the two to the same bytes).
    Values `rfc8785` cannot write (an integer past 2**53, NaN) are written as text first, so a
    record is never refused for what a tool was sent."""
    if _plain(value):
        try:
            return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        except UnicodeEncodeError:  # a lone surrogate: rfc8785 says what to do with it
            pass
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError, ValueError):
        return rfc8785.dumps(json.loads(json.dumps(value, default=str), parse_constant=str, parse_int=str))


_MAX_INT = 2**53 - 1


def _plain(value: Any) -> bool:
    if isinstance(value, str) or value is None or isinstance(value, bool):
        return True
    if isinstance(value, int):
        return -_MAX_INT <= value <= _MAX_INT
    if isinstance(value, dict):
        return all(
            isinstance(k, str) and (k.isascii() or all(ord(c) <= 0xFFFF for c in k)) and _plain(v)
            for k, v in value.items()
        )
    if isinstance(value, list | tuple):
        return all(_plain(v) for v in value)
    return False


def arguments_digest(arguments: Any) -> str:
    return hashlib.sha256(canonical(arguments)).hexdigest()


def now_ts() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class Sealed:
    seq: int
    ts: str
    prev: str
    hash: str
    body: str  # the canonical JSON of the record without its hash
    fields: dict[str, Any]


def seal(seq: int, prev: str, ts: str, fields: dict[str, Any]) -> Sealed:
    """The record `fields` as number `seq` after the record whose hash is `prev`."""
    record = {**fields, "seq": seq, "ts": ts, "prev": prev}
    body = canonical(record)
    return Sealed(seq, ts, prev, hashlib.sha256(body).hexdigest(), body.decode(), fields)
