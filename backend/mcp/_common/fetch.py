"""Fetch the file a tool was given as ``file_url``.

The host fills ``file_url`` with a signed, expiring http(s) URL of a user's
upload: ``{origin}/api/files/{id}/content?u=...&e=...&s=...``. Only links of
that shape on the host's own origin are fetched, and redirects are never
followed: otherwise a model (or text it read) could point a tool at an internal
HTTP service and read the answer. The host names its origin in
``SWITCHBOARD_FILES_ORIGIN`` when it starts a server over stdio; a server run on
its own without it accepts the signed shape on localhost only.

A local absolute path is accepted only when the server's ``*_ALLOW_LOCAL=1``
variable is set (tests, local experiments): otherwise a model could make the
server read any file the server's user can read.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from email.message import Message
from pathlib import Path, PurePosixPath
from urllib.parse import SplitResult, parse_qsl, unquote, urlsplit
from urllib.request import url2pathname

import httpx
from fastmcp.exceptions import ToolError

__all__ = [
    "DEFAULT_MAX_BYTES",
    "FILES_ORIGIN_ENV",
    "FetchedFile",
    "fetch_file",
    "host_file_link_problem",
    "local_files_allowed",
]

DEFAULT_MAX_BYTES = 50 * 1024 * 1024
DEFAULT_TIMEOUT_S = 30.0
FILES_ORIGIN_ENV = "SWITCHBOARD_FILES_ORIGIN"

_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
_DEFAULT_PORTS = {"http": 80, "https": 443}
_FILE_PATH = re.compile(r"/api/files/[A-Za-z0-9_-]{1,64}/content")
_SIGNATURE = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class FetchedFile:
    name: str  # best-known file name, for naming outputs; may be ""
    data: bytes
    content_type: str | None


def local_files_allowed(env_var: str) -> bool:
    return os.environ.get(env_var, "").strip() == "1"


async def fetch_file(
    file_url: str,
    *,
    allow_local: bool = False,
    max_bytes: int = DEFAULT_MAX_BYTES,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> FetchedFile:
    """Download ``file_url`` (or read it, if local files are allowed), at most ``max_bytes``."""
    url = file_url.strip()
    if not url:
        raise ToolError("no file was given; attach a file to your message and try again")
    parsed = urlsplit(url)
    if Path(url).is_absolute() or parsed.scheme == "file":
        if not allow_local:
            raise ToolError("local file paths are not accepted; attach the file to your message instead")
        path = Path(url2pathname(parsed.path)) if parsed.scheme == "file" else Path(url)
        return _read_local(path, max_bytes)
    if parsed.scheme not in ("http", "https"):
        raise ToolError(f"unsupported file link {url[:200]!r}: expected the http(s) URL of an attached file")
    problem = host_file_link_problem(url, os.environ.get(FILES_ORIGIN_ENV, ""))
    if problem:
        raise ToolError(
            f"refused the file link {url[:200]!r}: {problem}. Only links to files attached "
            "to the message are fetched; attach the file and the host fills in its link"
        )
    return await _fetch_http(url, max_bytes, timeout_s)


def host_file_link_problem(url: str, files_origin: str) -> str | None:
    """Why ``url`` is not one of the host's signed file links, or None when it is.

    ``files_origin`` is the host's base URL (scheme, host, port and an optional path
    prefix); empty means "the host runs on this machine": any port on localhost.
    """
    try:
        link = urlsplit(url)
        link_port = _port(link)
    except ValueError:
        return "it is not a valid URL"
    if link.username is not None or link.password is not None:
        return "it carries a user name or password"
    if link.fragment:
        return "it has a #fragment"
    host = (link.hostname or "").lower()
    prefix = ""
    if files_origin.strip():
        try:
            origin = urlsplit(files_origin.strip())
            origin_port = _port(origin)
        except ValueError:
            return f"{FILES_ORIGIN_ENV}={files_origin!r} is not a valid URL; fix the environment"
        expected = (origin.scheme, (origin.hostname or "").lower(), origin_port)
        if (link.scheme, host, link_port) != expected:
            return "it is not on the host's own origin"
        prefix = origin.path.rstrip("/")
    elif host not in _LOCAL_HOSTS:
        return f"it is not on this machine (the host sets {FILES_ORIGIN_ENV} to allow another)"
    path = link.path
    if not path.startswith(prefix) or not _FILE_PATH.fullmatch(path[len(prefix) :]):
        return "its path is not /api/files/{id}/content"
    try:
        query = parse_qsl(link.query, keep_blank_values=True, strict_parsing=True)
    except ValueError:
        return "its signature is missing or malformed"
    fields = dict(query)
    if len(query) != 3 or set(fields) != {"u", "e", "s"}:
        return "its signature is missing or malformed"
    if not fields["e"].isdigit() or not _SIGNATURE.fullmatch(fields["s"]):
        return "its signature is missing or malformed"
    return None


def _port(parts: SplitResult) -> int | None:
    return parts.port or _DEFAULT_PORTS.get(parts.scheme.lower())


def _too_big(max_bytes: int) -> ToolError:
    mb = 1024 * 1024
    limit = f"{max_bytes / mb:g} MB" if max_bytes >= mb else f"{max_bytes:,} bytes"
    return ToolError(f"the file is larger than the limit of {limit}")


def _read_local(path: Path, max_bytes: int) -> FetchedFile:
    if not path.is_file():
        raise ToolError(f"no such file: {path}")
    if path.stat().st_size > max_bytes:
        raise _too_big(max_bytes)
    return FetchedFile(name=path.name, data=path.read_bytes(), content_type=None)


async def _fetch_http(url: str, max_bytes: int, timeout_s: float) -> FetchedFile:
    try:
        async with (
            # No redirects: a followed redirect would leave the host's own origin.
            httpx.AsyncClient(timeout=timeout_s, follow_redirects=False) as client,
            client.stream("GET", url) as response,
        ):
            if response.is_redirect or 300 <= response.status_code < 400:
                raise ToolError(
                    f"the file link answered with a redirect (HTTP {response.status_code}), "
                    "which is not followed; attach the file again"
                )
            if response.status_code >= 400:
                raise ToolError(_status_message(response.status_code))
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > max_bytes:
                raise _too_big(max_bytes)
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > max_bytes:
                    raise _too_big(max_bytes)
                chunks.append(chunk)
            return FetchedFile(
                name=_file_name(response, url),
                data=b"".join(chunks),
                content_type=response.headers.get("content-type"),
            )
    except httpx.TimeoutException:
        raise ToolError(f"downloading the file timed out after {timeout_s:g} s; try again") from None
    except httpx.HTTPError as exc:
        raise ToolError(
            f"could not download the file ({type(exc).__name__}); check that the link is reachable from the tool server"
        ) from None


def _status_message(status: int) -> str:
    if status == 429:
        return "the file server is busy (HTTP 429); try again in a moment"
    if status >= 500:
        return f"the file server failed (HTTP {status}); try again later"
    return f"the file link expired or is invalid (HTTP {status}); attach the file again"


def _file_name(response: httpx.Response, url: str) -> str:
    disposition = response.headers.get("content-disposition")
    if disposition:
        header = Message()
        header["content-disposition"] = disposition
        name = header.get_filename()
        if name:
            return PurePosixPath(name.replace("\\", "/")).name
    return PurePosixPath(unquote(urlsplit(url).path)).name
