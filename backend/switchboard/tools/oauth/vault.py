"""Where the tools layer finds users' own credentials: an interface the host
implements (encrypted in the conversation store); the tools layer never sees how.

Kinds: ``token`` (a user-entered token), ``oauth_tokens`` and ``oauth_client``
(the OAuth token set, with the private DPoP key its tokens are bound to if any, and the
registered client, as JSON).

It also keeps pending OAuth sign-ins (the state, PKCE verifier and discovered metadata
between the redirect to the authorization server and the callback): at most one per
(server, user), the newest replacing the older, each taken once, so that the callback can
land on any app process that shares the store."""

from __future__ import annotations

import time
from collections.abc import Collection
from typing import NamedTuple, Protocol

__all__ = ["SIGN_IN_KINDS", "CredentialVault", "MemoryVault", "PendingSignIn"]

# What Disconnect forgets: the user's sign-in to a server. A user's own server also keeps its
# headers in the vault (kind `server_headers`): they belong to the server, not to the sign-in.
SIGN_IN_KINDS = ("token", "oauth_tokens", "oauth_client", "oauth_step_up")


class PendingSignIn(NamedTuple):
    server: str
    user: str
    value: str  # JSON, in clear here; the host encrypts it at rest
    created: float  # epoch seconds


class CredentialVault(Protocol):
    async def get(self, server: str, user: str, kind: str) -> str | None: ...

    async def put(self, server: str, user: str, kind: str, value: str) -> None: ...

    async def forget(self, server: str, user: str, kinds: Collection[str] | None = None) -> None:
        """This user's credentials for this server: those of `kinds`, else every one."""
        ...

    async def put_pending(self, state: str, server: str, user: str, value: str, *, max_age_s: float) -> None:
        """Keep a pending sign-in under its `state`; any other of this (server, user) is dropped,
        and so is every pending sign-in older than `max_age_s`."""
        ...

    async def take_pending(self, state: str) -> PendingSignIn | None:
        """The pending sign-in of this `state`, removed (single use); None when there is none."""
        ...


class MemoryVault:
    """Held in memory only: for a pool without a store (tests, `check-config`)."""

    def __init__(self) -> None:
        self._items: dict[tuple[str, str, str], str] = {}
        self._pending: dict[str, PendingSignIn] = {}

    async def get(self, server: str, user: str, kind: str) -> str | None:
        return self._items.get((server, user, kind))

    async def put(self, server: str, user: str, kind: str, value: str) -> None:
        self._items[(server, user, kind)] = value

    async def forget(self, server: str, user: str, kinds: Collection[str] | None = None) -> None:
        for key in [k for k in self._items if k[:2] == (server, user) and (kinds is None or k[2] in kinds)]:
            del self._items[key]

    async def put_pending(self, state: str, server: str, user: str, value: str, *, max_age_s: float) -> None:
        now = time.time()
        for key, item in list(self._pending.items()):
            if (item.server, item.user) == (server, user) or now - item.created > max_age_s:
                del self._pending[key]
        self._pending[state] = PendingSignIn(server, user, value, now)

    async def take_pending(self, state: str) -> PendingSignIn | None:
        return self._pending.pop(state, None)
