"""Where the tools layer finds users' own credentials: an interface the host
implements (encrypted in the conversation store); the tools layer never sees how.

Kinds: ``token`` (a user-entered token), ``oauth_tokens`` and ``oauth_client``
(the OAuth token set and registered client, as JSON)."""

from __future__ import annotations

from typing import Protocol

__all__ = ["CredentialVault", "MemoryVault"]


class CredentialVault(Protocol):
    async def get(self, server: str, user: str, kind: str) -> str | None: ...

    async def put(self, server: str, user: str, kind: str, value: str) -> None: ...

    async def forget(self, server: str, user: str) -> None:
        """Every credential of this user for this server."""
        ...


class MemoryVault:
    """Held in memory only: for a pool without a store (tests, `check-config`)."""

    def __init__(self) -> None:
        self._items: dict[tuple[str, str, str], str] = {}

    async def get(self, server: str, user: str, kind: str) -> str | None:
        return self._items.get((server, user, kind))

    async def put(self, server: str, user: str, kind: str, value: str) -> None:
        self._items[(server, user, kind)] = value

    async def forget(self, server: str, user: str) -> None:
        for key in [k for k in self._items if k[:2] == (server, user)]:
            del self._items[key]
