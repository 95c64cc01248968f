"""Artifact and upload store: bytes and, beside them, metadata, in the file store (a folder
under the data dir, or an S3-compatible bucket: `files/backends.py`), each owned by one user. Ids are
random; file names are never used as paths. Local files are private to the app's user (0600 in a
0700 folder).

Upload quotas are counted by an `UploadCounts`: in memory for one process (`MemoryCounts`, built
once from the metadata files on first use and kept up to date by uploads, deletes and retention,
so an upload costs no scan), or in the conversation store when several processes share the files
(`quotas.StoreCounts`).  Methods that touch the file store block (on S3, on the network):
code on the event loop calls their `a`-named twins (`aput`, `aget`, `aread`, `adelete`), which run
them in a worker thread, so one user's upload or artifact never holds up another user's turn."""

from __future__ import annotations

import asyncio
import codecs
import json
import mimetypes
import re
import secrets
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import BinaryIO, Protocol

from ..errors import BadRequest, NotFound
from ..identity.users import normalize_email
from .backends import FileBackend, LocalFiles

__all__ = [
    "ArtifactStore",
    "MemoryCounts",
    "StoredFile",
    "UploadCounts",
    "Usage",
    "check_quota",
    "checked_mime",
    "sniff_mime",
]

_HEAD = 65536  # the bytes a type is checked on
_ID = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
_SIGNATURES: list[tuple[bytes, int, str]] = [
    (b"\x89PNG\r\n\x1a\n", 0, "image/png"),
    (b"\xff\xd8\xff", 0, "image/jpeg"),
    (b"GIF87a", 0, "image/gif"),
    (b"GIF89a", 0, "image/gif"),
    (b"%PDF-", 0, "application/pdf"),
    (b"PK\x03\x04", 0, "application/zip"),
    (b"WEBP", 8, "image/webp"),
]
# Types whose bytes carry no signature; a declared one is accepted as long as
# the bytes are not a known binary format.
_TEXTUAL_PREFIXES = ("text/", "application/json", "image/svg+xml", "application/xml", "application/javascript")


def sniff_mime(data: bytes) -> str | None:
    for magic, offset, mime in _SIGNATURES:
        if data[offset : offset + len(magic)] == magic:
            return mime
    return None


# What a browser sends when it does not know the type; the file name then says more.
_GENERIC = frozenset(
    {
        "",
        "application/octet-stream",
        "binary/octet-stream",
        "application/unknown",
        "application/x-unknown",
        "application/download",
        "application/force-download",
    }
)
# The standard library's own table (not the host's /etc/mime.types: the same answer on every
# machine), plus common types it lacks.
_TYPES = mimetypes.MimeTypes()
for _ext, _type in (
    (".md", "text/markdown"),
    (".markdown", "text/markdown"),
    (".yaml", "application/yaml"),
    (".yml", "application/yaml"),
    (".jsonl", "application/jsonl"),
    (".xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
    (".docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
    (".pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation"),
):
    _TYPES.add_type(_type, _ext)


def _declared_type(declared: str, name: str) -> str:
    declared = (declared or "").split(";", 1)[0].strip().lower()
    guessed = _TYPES.guess_type(name, strict=False)[0] if name else None
    if declared in _GENERIC or (declared == "application/vnd.ms-excel" and guessed == "text/csv"):
        # No type, a generic one, or Windows' name for CSV files: the extension decides.
        return guessed or "application/octet-stream"
    return declared


def checked_mime(declared: str, data: bytes, name: str = "") -> str:
    """The type to store: the declared one (or, when none or a generic one was
    declared, the one the file name's extension gives) when the bytes agree with
    it; the detected one when they do not; never a type that could render as
    HTML for bytes that are really something else."""
    declared = _declared_type(declared, name)
    detected = sniff_mime(data)
    if detected is not None:
        if declared == detected or (declared.startswith("application/") and detected == "application/zip"):
            return declared
        return detected
    if declared.startswith(("image/", "application/pdf")) and declared != "image/svg+xml":
        return "application/octet-stream"  # declared binary, no matching signature
    if declared.startswith(_TEXTUAL_PREFIXES):
        try:
            codecs.getincrementaldecoder("utf-8")().decode(data[:_HEAD], final=False)  # a cut character is fine
        except UnicodeDecodeError:
            return "application/octet-stream"
    return declared


def safe_name(name: str) -> str:
    name = name.replace("\\", "/").rsplit("/", 1)[-1]
    name = re.sub(r"[\x00-\x1f\x7f]", "", name).strip().lstrip(".")
    return name[:200] or "file"


@dataclass(frozen=True, slots=True)
class StoredFile:
    id: str
    name: str
    mime: str
    size: int
    owner: str
    kind: str  # "artifact" | "upload"
    created: float
    scripts: bool = False  # an HTML artifact may run scripts (its server opted in with `artifact_scripts`)


@dataclass(slots=True)
class Usage:
    bytes: int = 0
    files: int = 0


def check_quota(usage: Usage, size: int, *, max_bytes: int, max_files: int) -> None:
    """Raise unless one more upload of `size` bytes fits beside `usage` (an empty file counts as one)."""
    if usage.files + 1 > max_files:
        raise BadRequest(
            f"you already have {usage.files:,} stored uploads, the limit is {max_files:,}",
            action="Older uploads are removed automatically after a while; try again later, "
            "or ask your administrator to raise SWITCHBOARD_MAX_UPLOADS_PER_USER.",
        )
    if usage.bytes + size > max_bytes:
        raise BadRequest(
            f"your uploads would exceed your {max_bytes // (1024 * 1024)} MB storage limit",
            action="Older uploads are removed automatically after a while; try again later or attach a smaller file.",
        )


class UploadCounts(Protocol):
    """What each user's stored uploads take. Called from worker threads (it may block)."""

    def reserve(self, owner: str, file_id: str, size: int, *, max_bytes: int, max_files: int) -> None:
        """Count an upload about to be written, or raise BadRequest when it does not fit; two
        uploads at once cannot pass the quota together."""
        ...

    def release(self, owner: str, file_id: str, size: int) -> None:
        """An upload removed (or never written)."""
        ...

    def usage(self, owner: str) -> Usage: ...


class MemoryCounts:
    """One process's counter, built from the stored uploads (`scan`) the first time it is asked."""

    def __init__(self, scan: Callable[[], Iterator[tuple[str, str, int]]]) -> None:
        self._scan = scan
        self._lock = threading.Lock()
        self._uploads: dict[str, Usage] | None = None  # per owner; None until first counted

    def _counted(self) -> dict[str, Usage]:
        """(Call with the lock held.)"""
        if self._uploads is None:
            uploads: dict[str, Usage] = {}
            for _, owner, size in self._scan():
                usage = uploads.setdefault(owner, Usage())
                usage.bytes += size
                usage.files += 1
            self._uploads = uploads
        return self._uploads

    def reserve(self, owner: str, file_id: str, size: int, *, max_bytes: int, max_files: int) -> None:
        with self._lock:
            usage = self._counted().setdefault(owner, Usage())
            check_quota(usage, size, max_bytes=max_bytes, max_files=max_files)
            usage.bytes += size
            usage.files += 1

    def release(self, owner: str, file_id: str, size: int) -> None:
        with self._lock:
            usage = self._uploads.get(owner) if self._uploads is not None else None
            if usage is not None:  # (not counted yet: the first count will not see the file)
                usage.bytes = max(0, usage.bytes - size)
                usage.files = max(0, usage.files - 1)

    def usage(self, owner: str) -> Usage:
        with self._lock:
            usage = self._counted().get(owner, Usage())
            return Usage(usage.bytes, usage.files)


class ArtifactStore:
    def __init__(self, files: Path | FileBackend) -> None:
        self.files: FileBackend = LocalFiles(files) if isinstance(files, Path) else files
        self.counts: UploadCounts = MemoryCounts(self.stored_uploads)

    def use_counts(self, counts: UploadCounts) -> None:
        """Upload quotas counted elsewhere (in the store: right with several processes on one file store)."""
        self.counts = counts

    @staticmethod
    def _keys(file_id: str) -> tuple[str, str]:
        if not _ID.match(file_id):
            raise NotFound("no such file")
        return f"{file_id}.bin", f"{file_id}.json"

    def put(
        self,
        *,
        owner: str,
        name: str,
        mime: str,
        data: bytes | BinaryIO,
        kind: str = "artifact",
        scripts: bool = False,
        size: int | None = None,
        file_id: str | None = None,
    ) -> StoredFile:
        """Store bytes, or a file object read in parts (then `size` is its length); the type is
        checked on the first bytes."""
        file_id = file_id or secrets.token_urlsafe(18)
        blob, meta = self._keys(file_id)
        name = safe_name(name)
        if isinstance(data, bytes | bytearray):
            head, length = bytes(data[:_HEAD]), len(data)
        else:
            head, length = data.read(_HEAD), size or 0
            data.seek(0)
        stored = StoredFile(
            id=file_id,
            name=name,
            mime=checked_mime(mime, head, name),
            size=length,
            owner=owner,
            kind=kind,
            created=time.time(),
            scripts=scripts,
        )
        self.files.write(blob, data)
        self.files.write(meta, json.dumps(asdict(stored)).encode())
        return stored

    def put_upload(
        self,
        *,
        owner: str,
        name: str,
        mime: str,
        data: bytes | BinaryIO,
        max_bytes: int,
        max_files: int,
        size: int | None = None,
    ) -> StoredFile:
        """Store a user's upload within their quotas (bytes and number of files; an
        empty file counts as one).  The quota is reserved before the bytes are written,
        so concurrent uploads cannot pass it together."""
        length = len(data) if isinstance(data, bytes | bytearray) else (size or 0)
        file_id = secrets.token_urlsafe(18)
        self.counts.reserve(owner, file_id, length, max_bytes=max_bytes, max_files=max_files)
        try:
            return self.put(owner=owner, name=name, mime=mime, data=data, kind="upload", size=length, file_id=file_id)
        except BaseException:
            self.counts.release(owner, file_id, length)
            raise

    def get(self, file_id: str, *, owner: str | None) -> tuple[StoredFile, Path | None]:
        """The file and, in a local folder, its path; NotFound unless `owner` owns it (None: any owner)."""
        blob, meta = self._keys(file_id)
        try:
            entry = json.loads(self.files.read(meta))
            # files stored before addresses were normalized may name a mixed-case spelling
            stored = StoredFile(**{**entry, "owner": normalize_email(str(entry.get("owner", "")))})
        except (NotFound, ValueError, TypeError):
            raise NotFound("no such file") from None
        if owner is not None and stored.owner != normalize_email(owner):
            raise NotFound("no such file")  # same answer as missing: no probing other users' ids
        return stored, self.files.local_path(blob)

    def read(self, stored: StoredFile) -> bytes:
        """A small file's bytes (a markdown artifact to render, an HTML page to theme)."""
        return self.files.read(self._keys(stored.id)[0])

    def chunks(self, stored: StoredFile) -> AsyncIterator[bytes]:
        """The file's bytes as a stream of chunks, for a response that is never held whole."""
        return self.files.chunks(self._keys(stored.id)[0])

    def delete(self, file_id: str, *, owner: str) -> bool:
        """Remove one of the owner's files; False when there is none."""
        try:
            stored, _ = self.get(file_id, owner=owner)
        except NotFound:
            return False
        blob, meta = self._keys(file_id)
        self.files.delete(blob)
        self.files.delete(meta)
        if stored.kind == "upload":
            self.counts.release(owner, file_id, stored.size)
        return True

    async def aput(
        self, *, owner: str, name: str, mime: str, data: bytes, kind: str = "artifact", scripts: bool = False
    ) -> StoredFile:
        return await asyncio.to_thread(
            lambda: self.put(owner=owner, name=name, mime=mime, data=data, kind=kind, scripts=scripts)
        )

    async def aget(self, file_id: str, *, owner: str | None) -> tuple[StoredFile, Path | None]:
        return await asyncio.to_thread(lambda: self.get(file_id, owner=owner))

    async def aread(self, stored: StoredFile) -> bytes:
        return await asyncio.to_thread(self.read, stored)

    async def adelete(self, file_id: str, *, owner: str) -> bool:
        return await asyncio.to_thread(lambda: self.delete(file_id, owner=owner))

    def usage(self, owner: str) -> Usage:
        """What `owner`'s stored uploads take (a copy)."""
        return self.counts.usage(owner)

    def stored_uploads(self) -> Iterator[tuple[str, str, int]]:
        """Every stored upload, from the metadata files: (id, owner, size)."""
        for meta in self.files.keys(".json"):
            try:
                entry = json.loads(self.files.read(meta))
            except (NotFound, ValueError):
                continue
            if entry.get("kind") == "upload":
                yield meta.removesuffix(".json"), normalize_email(str(entry.get("owner"))), int(entry.get("size", 0))

    def purge_older_than(self, seconds: float) -> int:
        cutoff = time.time() - seconds
        removed = 0
        for meta in list(self.files.keys(".json")):
            try:
                entry = json.loads(self.files.read(meta))
                created = entry["created"]
            except (NotFound, ValueError, KeyError):
                continue
            if created < cutoff:
                self.files.delete(meta.removesuffix(".json") + ".bin")
                self.files.delete(meta)
                removed += 1
                if entry.get("kind") == "upload":
                    self.counts.release(
                        normalize_email(str(entry.get("owner"))), meta.removesuffix(".json"), int(entry.get("size", 0))
                    )
        return removed
