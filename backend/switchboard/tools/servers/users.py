"""The pool's servers with one session per user: each user's credential (a token they enter,
or an OAuth sign-in), their sessions, and the server as each user sees it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...config.models import ServerConfig
from ...errors import NeedsAuth, ServerUnavailable, ToolError
from ..models import ServerStatus
from ..oauth.vault import SIGN_IN_KINDS
from .connection import ServerConnection
from .user_sessions import UserSessions

if TYPE_CHECKING:
    from ..apps import AppResources
    from ..catalogue_watch import CatalogueWatch
    from ..oauth.flow import SignIns
    from ..oauth.vault import CredentialVault

__all__ = ["PerUserServers"]

TOKEN_CHECK_S = 15.0  # how long a newly entered token is tried before the answer goes back


class PerUserServers:
    """Part of `ServerPool` (pool.py): what its per-user servers need."""

    connections: dict[str, ServerConnection | UserSessions]
    vault: CredentialVault
    sign_ins: SignIns
    apps: AppResources
    watch: CatalogueWatch
    _connection_args: dict[str, Any]
    _rebuild: Callable[[], None]
    credentials_changed: Callable[[str, str], None]

    def _user_sessions(self, name: str, config: ServerConfig, transport: Any) -> UserSessions:
        async def changed(user: str) -> None:  # this user's listing changed
            self.apps.forget(name)
            self._rebuild()
            self.watch.changed(name)

        def make(user: str, headers: dict[str, str], auth: Any) -> ServerConnection:
            async def on_status(status: ServerStatus) -> None:
                await group._on_status(conn)

            conn = ServerConnection(
                name,
                config,
                on_status=on_status,
                transport=transport,
                user=user,
                headers=headers,
                http_auth=auth,
                **self._connection_args,
            )
            return conn

        async def credential(user: str) -> tuple[dict[str, str], Any]:
            return await self._credential(name, config, user)

        group = UserSessions(
            name,
            config,
            credential=credential,
            make=make,
            on_change=changed,
            init_timeout_s=float(self._connection_args["init_timeout_s"] or 60),
        )
        return group

    async def _credential(self, name: str, config: ServerConfig, user: str) -> tuple[dict[str, str], Any]:
        """The headers (and httpx auth) of one user's session on a per-user server."""
        auth = config.auth
        if auth is None:
            return {}, None
        if auth.type == "user_token":
            token = await self.vault.get(name, user, "token")
            if not token:
                raise NeedsAuth(
                    f"server '{name}' needs your own token: open the tools panel, press Connect "
                    f"next to '{name}' and enter it, then try again"
                )
            return {auth.header: auth.format.format(token=token)}, None
        if await self.vault.get(name, user, "oauth_tokens") is None:
            raise NeedsAuth(
                f"server '{name}' needs you to sign in first: press Connect next to '{name}' in the "
                "tools panel, then try again"
            )
        return {}, self.sign_ins.session_auth(name, config, user)

    async def begin_sign_in(self, name: str, user: str) -> str:
        """The authorization server's URL where this user signs in to the server."""
        return await self.sign_ins.begin(name, self._per_user(name).config, user)

    async def finish_sign_in(self, user: str, *, state: str, code: str, error: str = "", iss: str | None = None) -> str:
        """Complete a sign-in from the callback; the user's session reopens with the new tokens."""
        name = await self.sign_ins.finish(
            user, state=state, code=code, error=error, iss=iss, config_of=lambda server: self._per_user(server).config
        )
        group = self._per_user(name)
        await group.close_user(user)
        self.credentials_changed(name, user)
        await group.open(user)
        return name

    def _per_user(self, name: str) -> UserSessions:
        group = self.connections.get(name)
        if not isinstance(group, UserSessions):
            raise ToolError(f"server '{name}' does not take a user's own credential")
        return group

    async def connected(self, name: str, user: str) -> bool:
        """Whether this user has given the server their credential (or it needs none)."""
        config = self._per_user(name).config
        if config.auth is None:
            return True
        kind = "token" if config.auth.type == "user_token" else "oauth_tokens"
        return await self.vault.get(name, user, kind) is not None

    async def user_status(self, name: str, user: str) -> ServerStatus:
        """The server as this user sees it (per-user servers); the shared status otherwise."""
        conn = self.connections[name]
        if not isinstance(conn, UserSessions):
            return conn.status
        scopes = await self.sign_ins.step_up_wanted(name, user)
        if scopes is not None:  # a call was refused for want of scopes: not a failure, a sign-in to do
            return ServerStatus(
                name,
                "needs_auth",
                conn.status.transport,
                reason=f"needs more permissions ({scopes}): press Connect to allow them",
            )
        session = conn.session_of(user)
        if session is not None and session.status.status != "disabled":
            return session.status
        base = conn.status
        if conn.config.user_credential and not await self.connected(name, user):
            return ServerStatus(name, "needs_auth", base.transport, reason="connect your account to use this server")
        listing = conn.listing_of(user)
        return ServerStatus(
            name,
            "ready",
            base.transport,
            tool_count=len(listing.tools) if listing else 0,
            protocol_version=base.protocol_version,
        )

    async def open_for_user(self, names: list[str], user: str, wait_s: float) -> None:
        """Start this user's sessions of these per-user servers where they have a credential but
        no listing yet (after a restart, say), and wait up to `wait_s` for them to list their tools,
        so that a turn can offer them.  Never from a GET: listing is a side effect on the server."""
        opened = []
        for name in names:
            conn = self.connections.get(name)
            if not isinstance(conn, UserSessions) or not conn.config.enabled or conn.listing_of(user) is not None:
                continue
            if conn.session_of(user) is None and conn.config.user_credential and not await self.connected(name, user):
                continue
            try:
                opened.append(await conn.open(user))
            except (NeedsAuth, ServerUnavailable):
                continue
        deadline = time.monotonic() + wait_s
        while any(c.status.status == "starting" for c in opened) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)

    async def set_user_token(self, name: str, user: str, token: str) -> str | None:
        """Keep the user's token and try it: None when it works (or the server is down), else why
        the server refused it (the token is then forgotten)."""
        group = self._per_user(name)
        if group.config.auth is None or group.config.auth.type != "user_token":
            raise ToolError(f"server '{name}' does not take a user-entered token")
        await self.vault.put(name, user, "token", token)
        await group.close_user(user)  # the next use opens a session with the new token
        self.credentials_changed(name, user)
        await group.open(user)
        try:
            async with asyncio.timeout(TOKEN_CHECK_S):
                await group.session_for(user)
        except NeedsAuth:
            status = group.session_of(user)
            await self.disconnect(name, user)  # a refused token is not kept: the user is not connected
            return status.status.reason if status is not None and status.status.reason else "the server refused it"
        except (ServerUnavailable, TimeoutError):
            pass  # the server's trouble, not the token's: it is kept, and the status says what is wrong
        return None

    async def disconnect(self, name: str, user: str) -> None:
        """Forget this user's sign-in to the server (what else the vault keeps for it stays: a user
        server's headers) and close their session."""
        group = self._per_user(name)
        await self.vault.forget(name, user, SIGN_IN_KINDS)
        await group.forget_user(user)
        self.credentials_changed(name, user)

    async def credentials_changed_elsewhere(self, name: str, user: str) -> None:
        """Another app process changed this user's credential for the server: their session here
        closes, and the next use opens one with what the vault holds now."""
        group = self.connections.get(name)
        if isinstance(group, UserSessions):
            await group.close_user(user)
