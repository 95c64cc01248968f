"""Artifact and upload store: bytes under the data dir, metadata beside them,
each owned by one user.  Ids are random; file names are never used as paths.
Files are private to the app's user (0600 in a 0700 folder).

Upload quotas use a per-user counter, built once per process from the
metadata files on first use and kept up to date by uploads and retention, so
an upload costs no scan.  Methods that touch the disk block: async callers
run them in a worker thread."""

from __future__ import annotations

import json
import mimetypes
import os
import re
import secrets
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from .errors import BadRequest, NotFound

__all__ = ["ArtifactStore", "StoredFile", "Usage", "checked_mime", "sniff_mime"]

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
_GENERIC = frozenset({"", "application/octet-stream", "binary/octet-stream", "application/unknown",
                      "application/x-unknown", "application/download", "application/force-download"})  # fmt: skip
# The standard library's own table (not the host's /etc/mime.types: the same answer on every
# machine), plus common types it lacks.
_TYPES = mimetypes.MimeTypes()
for _ext, _type in ((".md", "text/markdown"), (".markdown", "text/markdown"), (".yaml", "application/yaml"),
                    (".yml", "application/yaml"), (".jsonl", "application/jsonl"),
                    (".xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
                    (".docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
                    (".pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation")):  # fmt: skip
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
            data[:65536].decode("utf-8")
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


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


class ArtifactStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        # The data dir (when this creates it) and the files dir: the app's user only.
        self.root.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.root.mkdir(mode=0o700, exist_ok=True)
        if self.root.stat().st_mode & 0o077:
            self.root.chmod(0o700)  # made by an older version, or by hand
        self._lock = threading.Lock()
        self._uploads: dict[str, Usage] | None = None  # per owner; None until first counted

    def _paths(self, file_id: str) -> tuple[Path, Path]:
        if not _ID.match(file_id):
            raise NotFound("no such file")
        return self.root / f"{file_id}.bin", self.root / f"{file_id}.json"

    def put(self, *, owner: str, name: str, mime: str, data: bytes, kind: str = "artifact",
            scripts: bool = False) -> StoredFile:  # fmt: skip
        file_id = secrets.token_urlsafe(18)
        blob, meta = self._paths(file_id)
        name = safe_name(name)
        stored = StoredFile(
            id=file_id,
            name=name,
            mime=checked_mime(mime, data, name),
            size=len(data),
            owner=owner,
            kind=kind,
            created=time.time(),
            scripts=scripts,
        )
        _write_private(blob, data)
        _write_private(meta, json.dumps(asdict(stored)).encode())
        return stored

    def put_upload(self, *, owner: str, name: str, mime: str, data: bytes, max_bytes: int, max_files: int) -> StoredFile:
        """Store a user's upload within their quotas (bytes and number of files; an
        empty file counts as one).  The quota is reserved before the bytes are written,
        so concurrent uploads cannot pass it together."""
        with self._lock:
            usage = self._counted().setdefault(owner, Usage())
            if usage.files + 1 > max_files:
                raise BadRequest(
                    f"you already have {usage.files:,} stored uploads, the limit is {max_files:,}",
                    action="Older uploads are removed automatically after a while; try again later, "
                    "or ask your administrator to raise SWITCHBOARD_MAX_UPLOADS_PER_USER.",
                )
            if usage.bytes + len(data) > max_bytes:
                raise BadRequest(
                    f"your uploads would exceed your {max_bytes // (1024 * 1024)} MB storage limit",
                    action="Older uploads are removed automatically after a while; try again later or attach a "
                    "smaller file.",
                )
            usage.bytes += len(data)
            usage.files += 1
        try:
            return self.put(owner=owner, name=name, mime=mime, data=data, kind="upload")
        except BaseException:
            with self._lock:
                usage.bytes -= len(data)
                usage.files -= 1
            raise

    def get(self, file_id: str, *, owner: str | None) -> tuple[StoredFile, Path]:
        """The file and its path; NotFound unless `owner` owns it (None: any owner)."""
        blob, meta = self._paths(file_id)
        try:
            stored = StoredFile(**json.loads(meta.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            raise NotFound("no such file") from None
        if owner is not None and stored.owner != owner:
            raise NotFound("no such file")  # same answer as missing: no probing other users' ids
        return stored, blob

    def delete(self, file_id: str, *, owner: str) -> bool:
        """Remove one of the owner's files; False when there is none."""
        try:
            stored, blob = self.get(file_id, owner=owner)
        except NotFound:
            return False
        _, meta = self._paths(file_id)
        blob.unlink(missing_ok=True)
        meta.unlink(missing_ok=True)
        if stored.kind == "upload":
            self._forget_upload(owner, stored.size)
        return True

    def usage(self, owner: str) -> Usage:
        """What `owner`'s stored uploads take (a copy)."""
        with self._lock:
            usage = self._counted().get(owner, Usage())
            return Usage(usage.bytes, usage.files)

    def _counted(self) -> dict[str, Usage]:
        """The per-owner upload counter, built from the metadata files the first time
        (call with the lock held)."""
        if self._uploads is None:
            uploads: dict[str, Usage] = {}
            for meta in self.root.glob("*.json"):
                try:
                    entry = json.loads(meta.read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    continue
                if entry.get("kind") == "upload":
                    usage = uploads.setdefault(str(entry.get("owner")), Usage())
                    usage.bytes += int(entry.get("size", 0))
                    usage.files += 1
            self._uploads = uploads
        return self._uploads

    def purge_older_than(self, seconds: float) -> int:
        cutoff = time.time() - seconds
        removed = 0
        for meta in self.root.glob("*.json"):
            try:
                entry = json.loads(meta.read_text(encoding="utf-8"))
                created = entry["created"]
            except (OSError, ValueError, KeyError):
                continue
            if created < cutoff:
                meta.with_suffix(".bin").unlink(missing_ok=True)
                meta.unlink(missing_ok=True)
                removed += 1
                if entry.get("kind") == "upload":
                    self._forget_upload(str(entry.get("owner")), int(entry.get("size", 0)))
        return removed

    def _forget_upload(self, owner: str, size: int) -> None:
        with self._lock:
            usage = self._uploads.get(owner) if self._uploads is not None else None
            if usage is not None:  # (not counted yet: the first count will not see the file)
                usage.bytes = max(0, usage.bytes - size)
                usage.files = max(0, usage.files - 1)
