"""Artifact and upload store: bytes under the data dir, metadata beside them,
each owned by one user.  Ids are random; file names are never used as paths."""

from __future__ import annotations

import json
import re
import secrets
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from .errors import NotFound

__all__ = ["ArtifactStore", "StoredFile", "sniff_mime"]

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


def checked_mime(declared: str, data: bytes) -> str:
    """The type to store: the declared one when the bytes agree with it; the
    detected one when they do not; never a type that could render as HTML
    for bytes that are really something else."""
    declared = (declared or "application/octet-stream").split(";", 1)[0].strip().lower()
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


class ArtifactStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)

    def _paths(self, file_id: str) -> tuple[Path, Path]:
        if not _ID.match(file_id):
            raise NotFound("no such file")
        return self.root / f"{file_id}.bin", self.root / f"{file_id}.json"

    def put(self, *, owner: str, name: str, mime: str, data: bytes, kind: str = "artifact",
            scripts: bool = False) -> StoredFile:  # fmt: skip
        file_id = secrets.token_urlsafe(18)
        blob, meta = self._paths(file_id)
        stored = StoredFile(
            id=file_id,
            name=safe_name(name),
            mime=checked_mime(mime, data),
            size=len(data),
            owner=owner,
            kind=kind,
            created=time.time(),
            scripts=scripts,
        )
        blob.write_bytes(data)
        meta.write_text(json.dumps(asdict(stored)), encoding="utf-8")
        return stored

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

    def usage(self, owner: str, kind: str) -> int:
        total = 0
        for meta in self.root.glob("*.json"):
            try:
                entry = json.loads(meta.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if entry.get("owner") == owner and entry.get("kind") == kind:
                total += int(entry.get("size", 0))
        return total

    def purge_older_than(self, seconds: float) -> int:
        cutoff = time.time() - seconds
        removed = 0
        for meta in self.root.glob("*.json"):
            try:
                created = json.loads(meta.read_text(encoding="utf-8"))["created"]
            except (OSError, ValueError, KeyError):
                continue
            if created < cutoff:
                meta.with_suffix(".bin").unlink(missing_ok=True)
                meta.unlink(missing_ok=True)
                removed += 1
        return removed
