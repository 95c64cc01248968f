"""Where uploads and artifacts keep their bytes: a folder (the default, under the data dir) or an
S3-compatible bucket (`SWITCHBOARD_FILES_URL=s3://bucket/prefix`), behind one small interface.

The bucket is reached through `obstore`; its endpoint, region and keys come from the standard
`AWS_*` variables (`AWS_ENDPOINT_URL` for MinIO, Ceph, R2 and other S3-compatible stores;
`AWS_ALLOW_HTTP=true` for a plain-http endpoint). Large objects are written in parts and read as a
stream of chunks, never whole."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import BinaryIO, Protocol
from urllib.parse import urlsplit

from ..errors import ConfigError, NotFound, StoreUnavailable

__all__ = ["FileBackend", "LocalFiles", "S3Files", "open_files"]

CHUNK = 1024 * 1024  # bytes per chunk when streaming, and the smallest part of a multipart upload is 5 MiB
PART = 8 * 1024 * 1024


class FileBackend(Protocol):
    """Named blobs. `NotFound` for a missing one; `StoreUnavailable` when the store cannot be reached."""

    description: str

    def write(self, key: str, data: bytes | BinaryIO) -> None: ...

    def read(self, key: str) -> bytes: ...

    def chunks(self, key: str) -> AsyncIterator[bytes]: ...

    def local_path(self, key: str) -> Path | None: ...

    def delete(self, key: str) -> None: ...

    def keys(self, suffix: str) -> Iterator[str]: ...


class LocalFiles:
    """A folder only the app's user can read (0700), each file 0600."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.description = str(root)
        self.root.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.root.mkdir(mode=0o700, exist_ok=True)
        if self.root.stat().st_mode & 0o077:
            self.root.chmod(0o700)  # made by an older version, or by hand

    def write(self, key: str, data: bytes | BinaryIO) -> None:
        fd = os.open(self.root / key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            if isinstance(data, bytes | bytearray | memoryview):
                handle.write(data)
            else:
                while block := data.read(CHUNK):
                    handle.write(block)

    def read(self, key: str) -> bytes:
        try:
            return (self.root / key).read_bytes()
        except FileNotFoundError:
            raise NotFound("no such file") from None

    async def chunks(self, key: str) -> AsyncIterator[bytes]:
        import anyio

        try:
            async with await anyio.open_file(self.root / key, "rb") as handle:
                while block := await handle.read(CHUNK):
                    yield block
        except FileNotFoundError:
            raise NotFound("no such file") from None

    def local_path(self, key: str) -> Path | None:
        return self.root / key

    def delete(self, key: str) -> None:
        (self.root / key).unlink(missing_ok=True)

    def keys(self, suffix: str) -> Iterator[str]:
        for path in self.root.glob(f"*{suffix}"):
            yield path.name


class S3Files:
    """A bucket (and key prefix) on any S3-compatible store."""

    def __init__(self, bucket: str, prefix: str) -> None:
        from obstore.store import S3Store

        self.description = f"s3://{bucket}/{prefix}".rstrip("/")
        self._store = S3Store(bucket, prefix=prefix or None)

    def _failed(self, exc: Exception) -> Exception:
        if isinstance(exc, FileNotFoundError):
            return NotFound("no such file")
        return StoreUnavailable(f"the file store {self.description} could not be reached ({type(exc).__name__})")

    def write(self, key: str, data: bytes | BinaryIO) -> None:
        import obstore

        try:
            obstore.put(self._store, key, data, chunk_size=PART)
        except Exception as exc:  # obstore raises its own tree (and OSError kinds) for every failure
            raise self._failed(exc) from exc

    def read(self, key: str) -> bytes:
        import obstore

        try:
            return obstore.get(self._store, key).bytes().to_bytes()
        except Exception as exc:
            raise self._failed(exc) from exc

    async def chunks(self, key: str) -> AsyncIterator[bytes]:
        import obstore

        try:
            result = await obstore.get_async(self._store, key)
            async for block in result.stream(min_chunk_size=CHUNK):
                yield bytes(block)
        except Exception as exc:
            raise self._failed(exc) from exc

    def local_path(self, key: str) -> Path | None:
        return None

    def delete(self, key: str) -> None:
        import obstore

        try:
            obstore.delete(self._store, key)
        except FileNotFoundError:
            return
        except Exception as exc:
            raise self._failed(exc) from exc

    def keys(self, suffix: str) -> Iterator[str]:
        import obstore

        try:
            for batch in obstore.list(self._store):
                for meta in batch:
                    if meta["path"].endswith(suffix):
                        yield meta["path"]
        except Exception as exc:
            raise self._failed(exc) from exc


def open_files(url: str | None, default: Path) -> FileBackend:
    """The file store named by `SWITCHBOARD_FILES_URL`: none or a path means a folder, `s3://`
    a bucket."""
    if not url:
        return LocalFiles(default)
    parts = urlsplit(url)
    if parts.scheme in ("", "file"):
        return LocalFiles(Path(parts.path if parts.scheme else url))
    if parts.scheme == "s3":
        if not parts.netloc:
            raise ConfigError(f"SWITCHBOARD_FILES_URL {url!r} names no bucket: write s3://bucket/prefix")
        return S3Files(parts.netloc, parts.path.strip("/"))
    raise ConfigError(f"SWITCHBOARD_FILES_URL {url!r}: use a folder, file:///folder or s3://bucket/prefix")
