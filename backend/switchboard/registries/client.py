"""One MCP registry over HTTP (API v0.1): `GET /v0.1/servers?search=&cursor=&limit=&version=latest`
page by page, and `GET /v0.1/servers/{name}/versions/latest`.

Limits: each answer is read up to `max_page_bytes` (a larger one is refused, not cut), each
request has `timeout_s`, a listing stops after `max_pages` (and says it was cut).  The operator
chose the registry, so its own origin is asked without more ado; a redirect elsewhere passes the
endpoint policy OAuth sign-ins use (public addresses only, the address checked is the address
connected to), and redirects are followed here, one by one, so that each is checked.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urljoin

import httpx2

from ..errors import ServerUnavailable
from ..tools.oauth.url_guard import POLICY_KEY, EndpointPolicy, PinnedTransport, Refusal, origin_of
from .entries import BadRegistryData, RegistryEntry, parse_entry

__all__ = ["Fetched", "Limits", "RegistryClient", "RegistryUnavailable"]

MAX_REDIRECTS = 3


class RegistryUnavailable(ServerUnavailable):
    """A registry could not be asked, or its answer was refused (the message says which)."""

    action = "Try again later; if it lasts, ask your administrator to check SWITCHBOARD_REGISTRY_URLS."


@dataclass(frozen=True)
class Limits:
    page_size: int = 100
    max_pages: int = 5
    max_page_bytes: int = 2 * 1024 * 1024
    timeout_s: float = 10.0  # each request
    total_s: float = 30.0  # a whole listing or lookup, however slowly its bytes arrive


@dataclass(frozen=True)
class Fetched:
    entries: list[RegistryEntry]
    skipped: int = 0  # entries that did not fit server.json, left out
    truncated: bool = False  # more pages than max_pages


class _RegistryPolicy(EndpointPolicy):
    """The sign-in endpoint policy, with the registry's words when it refuses."""

    async def check(self, url: str) -> str | None:
        found = await self.screen(url)
        if isinstance(found, Refusal):
            raise RegistryUnavailable(
                f"registry {self.server}: it sent this host on to {found.where}, which was refused, as {found.why}"
            )
        return found


class RegistryClient:
    def __init__(
        self, base_url: str, *, limits: Limits | None = None, transport: httpx2.AsyncBaseTransport | None = None
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.limits = limits or Limits()
        self._policy = _RegistryPolicy(server=self.base_url, own_origin=origin_of(self.base_url))
        self._transport = transport

    async def list(self, search: str) -> Fetched:
        """Every page of the active and inactive latest entries matching `search` (up to max_pages)."""
        try:
            async with asyncio.timeout(self.limits.total_s):
                return await self._list(search)
        except TimeoutError:
            raise RegistryUnavailable(
                f"registry {self.base_url} took over {self.limits.total_s:g} s to answer"
            ) from None

    async def _list(self, search: str) -> Fetched:
        entries: list[RegistryEntry] = []
        skipped = 0
        cursor: str | None = None
        async with self._client() as client:
            for _ in range(self.limits.max_pages):
                params = {"limit": str(self.limits.page_size), "version": "latest"}
                if search:
                    params["search"] = search
                if cursor:
                    params["cursor"] = cursor
                body = await self._get(client, f"{self.base_url}/v0.1/servers", params)
                if not isinstance(body, dict) or not isinstance(body.get("servers"), list):
                    raise BadRegistryData(
                        f"registry {self.base_url}: its answer is not a ServerList (no 'servers' list)"
                    )
                for item in body["servers"]:
                    try:
                        entries.append(parse_entry(item, self.base_url))
                    except BadRegistryData:
                        skipped += 1
                metadata = body.get("metadata")
                next_cursor = metadata.get("nextCursor") if isinstance(metadata, dict) else None
                if not isinstance(next_cursor, str) or not next_cursor or next_cursor == cursor:
                    return Fetched(entries, skipped)
                cursor = next_cursor
        return Fetched(entries, skipped, truncated=True)

    async def latest(self, name: str) -> RegistryEntry | None:
        """The latest version of one entry, or None when the registry does not know it."""
        url = f"{self.base_url}/v0.1/servers/{quote(name, safe='')}/versions/latest"
        try:
            async with asyncio.timeout(self.limits.total_s), self._client() as client:
                body = await self._get(client, url, {}, missing_ok=True)
        except TimeoutError:
            raise RegistryUnavailable(
                f"registry {self.base_url} took over {self.limits.total_s:g} s to answer"
            ) from None
        return None if body is None else parse_entry(body, self.base_url)

    def _client(self) -> httpx2.AsyncClient:
        inner = self._transport or httpx2.AsyncHTTPTransport()
        return httpx2.AsyncClient(
            transport=PinnedTransport(inner), timeout=self.limits.timeout_s, follow_redirects=False, trust_env=False
        )

    async def _get(
        self, client: httpx2.AsyncClient, url: str, params: dict[str, str], *, missing_ok: bool = False
    ) -> Any:
        request = client.build_request(
            "GET", url, params=params, headers={"Accept": "application/json"}, extensions={POLICY_KEY: self._policy}
        )
        for _ in range(MAX_REDIRECTS + 1):
            try:
                response = await client.send(request, stream=True)
            except httpx2.HTTPError as exc:
                raise RegistryUnavailable(
                    f"registry {self.base_url} could not be reached ({type(exc).__name__})"
                ) from None
            try:
                if response.is_redirect and "location" in response.headers:
                    target = urljoin(str(request.url), response.headers["location"])
                    request = client.build_request(
                        "GET", target, headers={"Accept": "application/json"}, extensions={POLICY_KEY: self._policy}
                    )
                    continue
                if missing_ok and response.status_code == 404:
                    return None
                if response.status_code != 200:
                    raise RegistryUnavailable(f"registry {self.base_url} answered HTTP {response.status_code}")
                return _json(self.base_url, await self._read(response))
            finally:
                await response.aclose()
        raise RegistryUnavailable(f"registry {self.base_url} redirected more than {MAX_REDIRECTS} times")

    async def _read(self, response: httpx2.Response) -> bytes:
        limit = self.limits.max_page_bytes
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise BadRegistryData(f"registry {self.base_url}: its answer is over {limit} bytes; refused")
        body = bytearray()
        try:
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > limit:
                    raise BadRegistryData(f"registry {self.base_url}: its answer is over {limit} bytes; refused")
        except httpx2.HTTPError as exc:
            raise RegistryUnavailable(
                f"registry {self.base_url}: its answer broke off ({type(exc).__name__})"
            ) from None
        return bytes(body)


def _json(registry: str, body: bytes) -> Any:
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise BadRegistryData(f"registry {registry}: its answer is not JSON") from None
