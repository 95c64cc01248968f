"""The chain's canonical JSON is RFC 8785's, byte for byte (the fast path and `rfc8785` agree),
and a record's hash covers every field, its seq and its link."""

from __future__ import annotations

import hashlib

import pytest
import rfc8785

from switchboard.audit.chain import GENESIS, arguments_digest, canonical, seal
from switchboard.audit.keys import load_key
from switchboard.audit.writer import Auditor, AuditSettings

VALUES = [
    {"b": 1, "a": [True, False, None], "c": {"z": "", "y": -(2**53 - 1)}},
    {"text": 'quote " backslash \\ slash / tab \t newline \n cr \r bell \x07 nul \x00 del \x7f'},
    {"é": "ünïcödé", "ß": "\u2028\u2029", "日本": "語", "\ue000": "private", "a\u00ff": 1},
    {"emoji": "😀 in a value", "nested": [[[]], {}, [{"k": "v"}]]},
    [1, "two", {"three": 3}],
    "just a string",
    2**53 - 1,
]


@pytest.mark.parametrize("value", VALUES)
def test_the_fast_path_writes_rfc8785s_bytes(value):
    assert canonical(value) == rfc8785.dumps(value)


def test_what_the_fast_path_leaves_to_rfc8785():
    for value in ({"f": 1.5}, {"f": 1e21}, {"big": 2**60}, {"😀": 1, "\uffff": 2}):
        expected = rfc8785.dumps(value) if "big" not in value else canonical(value)
        assert canonical(value) == expected
    assert canonical({"big": 2**60}) == b'{"big":"1152921504606846976"}'  # written, as text
    assert canonical({"n": float("nan")}) == b'{"n":"NaN"}'


def test_a_records_hash_covers_its_fields_seq_and_link():
    record = seal(7, GENESIS, "2026-11-28T10:00:00.000000Z", {"kind": "tool_call", "user": "ann@example.com"})
    assert record.hash == hashlib.sha256(record.body.encode()).hexdigest()
    assert (
        record.body
        == rfc8785.dumps(
            {
                "kind": "tool_call",
                "user": "ann@example.com",
                "seq": 7,
                "ts": "2026-11-28T10:00:00.000000Z",
                "prev": GENESIS,
            }
        ).decode()
    )
    for changed in (
        seal(8, GENESIS, record.ts, record.fields),
        seal(7, "1" * 64, record.ts, record.fields),
        seal(7, GENESIS, record.ts, {"kind": "tool_call", "user": "eve@example.com"}),
    ):
        assert changed.hash != record.hash


def test_arguments_are_a_digest_unless_full(tmp_path):
    key = load_key(None, tmp_path)
    assert (tmp_path / "audit-signing.key").stat().st_mode & 0o777 == 0o600
    assert load_key(None, tmp_path).public_key().public_bytes_raw() == key.public_key().public_bytes_raw()
    arguments = {"text": "a private sentence"}
    assert Auditor(key).arguments(arguments) == {"arguments_sha256": arguments_digest(arguments)}
    assert Auditor(key, AuditSettings(full_arguments=True)).arguments(arguments) == {"arguments": arguments}
