"""The file store: private file modes, upload quotas from a usage counter, type detection."""

from __future__ import annotations

import json
import stat
import threading
import time

import pytest

from switchboard.errors import BadRequest
from switchboard.files.artifacts import ArtifactStore, checked_mime
from switchboard.files.signing import load_or_create_key

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32
MB = 1024 * 1024


def mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def upload(store, owner="a", data=b"x", name="f.txt", **limits):
    limits = {"max_bytes": 10 * MB, "max_files": 100, **limits}
    return store.put_upload(owner=owner, name=name, mime="text/plain", data=data, **limits)


# -- private files ---------------------------------------------------------------------------


def test_files_and_folders_are_private_to_the_app(tmp_path):
    store = ArtifactStore(tmp_path / "data" / "files")
    stored = upload(store)
    artifact = store.put(owner="a", name="chart.png", mime="image/png", data=PNG)
    assert mode(tmp_path / "data") == 0o700 and mode(tmp_path / "data" / "files") == 0o700
    for file_id in (stored.id, artifact.id):
        for suffix in (".bin", ".json"):
            assert mode(tmp_path / "data" / "files" / f"{file_id}{suffix}") == 0o600


def test_an_open_files_folder_is_closed_on_start(tmp_path):
    (tmp_path / "files").mkdir(mode=0o755)
    (tmp_path / "files").chmod(0o755)
    ArtifactStore(tmp_path / "files")
    assert mode(tmp_path / "files") == 0o700


def test_the_signing_key_and_its_folder_are_private(tmp_path):
    load_or_create_key(tmp_path / "data" / "secret.key")
    assert mode(tmp_path / "data") == 0o700 and mode(tmp_path / "data" / "secret.key") == 0o600
    (tmp_path / "data" / "secret.key").chmod(0o644)  # e.g. copied in from a backup
    load_or_create_key(tmp_path / "data" / "secret.key")
    assert mode(tmp_path / "data" / "secret.key") == 0o600


# -- quotas ----------------------------------------------------------------------------------


def test_empty_files_count_against_the_file_quota(tmp_path):
    store = ArtifactStore(tmp_path)
    for _ in range(3):
        upload(store, data=b"", max_files=3)
    with pytest.raises(BadRequest) as refused:
        upload(store, data=b"", max_files=3)
    assert "3 stored uploads" in refused.value.message and "SWITCHBOARD_MAX_UPLOADS_PER_USER" in refused.value.action
    upload(store, owner="b", data=b"", max_files=3)  # per user
    assert store.usage("a").files == 3 and store.usage("a").bytes == 0


def test_the_byte_quota_counts_uploads_only(tmp_path):
    store = ArtifactStore(tmp_path)
    store.put(owner="a", name="big.bin", mime="", data=b"x" * 900)  # a tool's artifact: not the user's quota
    upload(store, data=b"x" * 600, max_bytes=1000)
    with pytest.raises(BadRequest, match="storage limit"):
        upload(store, data=b"x" * 500, max_bytes=1000)
    upload(store, data=b"x" * 400, max_bytes=1000)
    assert store.usage("a").bytes == 1000 and store.usage("a").files == 2


def test_the_counter_survives_a_restart_and_follows_retention(tmp_path):
    store = ArtifactStore(tmp_path)
    old = upload(store, data=b"old" * 10)
    upload(store, data=b"new")
    again = ArtifactStore(tmp_path)  # a new process: counted once from the metadata files
    assert (again.usage("a").bytes, again.usage("a").files) == (33, 2)
    meta = tmp_path / f"{old.id}.json"
    entry = json.loads(meta.read_text())
    entry["created"] = time.time() - 10 * 86400
    meta.write_text(json.dumps(entry))
    assert again.purge_older_than(86400) == 1
    assert (again.usage("a").bytes, again.usage("a").files) == (3, 1)


def test_concurrent_uploads_cannot_pass_the_quota_together(tmp_path):
    store = ArtifactStore(tmp_path)
    stored, refused = [], []
    start = threading.Barrier(16)

    def one() -> None:
        start.wait()
        try:
            stored.append(upload(store, data=b"", max_files=5))
        except BadRequest:
            refused.append(1)

    threads = [threading.Thread(target=one) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(stored) == 5 and len(refused) == 11
    assert len(list(tmp_path.glob("*.json"))) == 5


# -- types -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("declared", "name", "data", "expected"),
    [
        ("application/octet-stream", "data.csv", b"a,b\n1,2\n", "text/csv"),
        ("", "data.csv", b"a,b\n1,2\n", "text/csv"),
        ("application/vnd.ms-excel", "data.csv", b"a,b\n1,2\n", "text/csv"),  # what Windows browsers send
        ("application/octet-stream", "notes.md", b"# hi\n", "text/markdown"),
        ("", "chart.PNG", PNG, "image/png"),
        ("text/plain", "data.csv", b"a,b\n", "text/plain"),  # a specific declared type is kept
        ("application/octet-stream", "unknown.zzz", b"?", "application/octet-stream"),
        # The name never lends HTML (or an image type) to bytes that are something else.
        ("application/octet-stream", "page.html", PNG, "image/png"),
        ("", "page.html", b"\xff\xfe<\x00h\x00", "application/octet-stream"),
        ("", "fake.png", b"<script>alert(1)</script>", "application/octet-stream"),
        ("", "fake.svg", b"\xff\xfe\x00<svg", "application/octet-stream"),
    ],
)
def test_the_type_comes_from_the_name_when_none_or_a_generic_one_is_declared(declared, name, data, expected):
    assert checked_mime(declared, data, name) == expected


def test_a_stored_csv_upload_keeps_its_type(tmp_path):
    stored = ArtifactStore(tmp_path).put_upload(
        owner="a",
        name="sales.csv",
        mime="application/octet-stream",
        data=b"region,total\nnorth,3\n",
        max_bytes=MB,
        max_files=10,
    )
    assert stored.mime == "text/csv"
