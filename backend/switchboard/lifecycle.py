"""The running host's life: start, the conversation store (opened, retried until it opens, and
the relay between processes over it), reload, close, and the configuration it runs with now.
services.py builds the parts in order, then this, with them."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace

from .audit.writer import Auditor
from .chat import ChatEngine, Conversations, TaskPoller, TurnHub
from .chat.relay.postgres import LOST as LOST_REASON
from .chat.relay.seam import SwitchedRelay
from .config import AppConfig, load_app_config
from .config.console import overlay
from .config.loader import McpConfig
from .credentials import StoreVault
from .errors import ConfigError, SwitchboardError
from .files.artifacts import ArtifactStore
from .files.quotas import StoreCounts
from .identity.users import Authenticator
from .llm import ModelCatalogue
from .llm.probe import unreachable_local_models
from .llm.types import LLMStream
from .settings import Settings
from .store import ConversationStore, down_store, open_store
from .store.governance.audit_log import AuditStore
from .store.governance.console_rows import ConsoleRecords
from .store.governance.trust_rows import TrustRows
from .store.uploads import UploadRows
from .telemetry import Tracing
from .tools import ServerPool
from .user_server_rows import with_headers

__all__ = ["CurrentConfig", "Lifecycle"]

log = logging.getLogger("switchboard")

STOP_QUIET_S = 0.5  # a step of the shutdown that takes longer says on the console what it waits for


async def _saying_waits(what: str, step: Awaitable[object]) -> None:
    """Await one step of the shutdown; if it is not done within STOP_QUIET_S, one console line says
    what the process is waiting for (an idle stop waits for nothing and prints nothing)."""
    task = asyncio.ensure_future(step)
    done, _ = await asyncio.wait({task}, timeout=STOP_QUIET_S)
    if not done:
        log.info("waiting for %s", what, extra={"event": "stop_wait"})
    await task


class CurrentConfig:
    """The configuration the host runs with now, and its model catalogue: one holder, built first,
    that a reload (or the admin console's servers) changes through `use`, and that the parts built
    earlier (the model reporter) read from."""

    def __init__(self, config: AppConfig, models: ModelCatalogue) -> None:
        self.config = config
        self.models = models
        # The files' servers alone: `config.mcp` is them with the admin console's laid over them.
        self.files_mcp = config.mcp

    def use(self, config: AppConfig, files_mcp: McpConfig) -> None:
        self.config, self.files_mcp = config, files_mcp

    def use_models(self, models: ModelCatalogue) -> None:
        self.models = models


@dataclass(frozen=True)
class LifeParts:
    """The parts of the host the lifecycle acts on (built before it, in services.py)."""

    settings: Settings
    environ: Mapping[str, str]
    current: CurrentConfig
    auth: Authenticator
    pool: ServerPool
    llm: LLMStream
    artifacts: ArtifactStore
    engine: ChatEngine
    conversations: Conversations
    turns: TurnHub
    relay: SwitchedRelay
    tasks: TaskPoller
    audit: Auditor
    tracing: Tracing


class Lifecycle:
    """Start, the store, reload and close: the one place the running host changes. Built by
    services.py with the parts it acts on; each attribute is set here, in `__init__`."""

    def __init__(self, parts: LifeParts) -> None:
        self.parts = parts
        # The files as they are now, when the last reload was refused for them (the running
        # configuration is older): what /readyz and the page report until a reload succeeds.
        self.refused_reload: list[ConfigError] = []
        # (user) -> closes their open pages here: another process's admin revoked their sessions
        # (the web layer subscribes its open sockets).
        self.sessions_revoked: list[Callable[[str], object]] = []
        self._store_retry: asyncio.Task[None] | None = None
        self._warm_up: asyncio.Task[None] | None = None
        self._model_probe: asyncio.Task[None] | None = None

    @property
    def config(self) -> AppConfig:
        return self.parts.current.config

    @property
    def store(self) -> ConversationStore:
        return self.parts.conversations.store

    @property
    def store_error(self) -> str | None:
        """Why the conversation store cannot be used now (it could not be opened), or None."""
        down = self.store.down
        return down.message if down is not None else None

    async def start(self) -> None:
        """Open the store, then start every server in the background. The model library (seconds
        of CPU to import) loads only once the servers have settled, so that it does not hold back
        their start-up; a turn that comes first loads it itself."""
        await self.open_store()
        self.parts.pool.prepare(await self._use_console(self.config))
        self.parts.audit.start()
        self.parts.pool.start()
        self._probe_models()
        self.parts.tasks.start()  # takes the stored tasks nobody follows (after a restart) once the store is open
        warm_up = getattr(self.parts.llm, "warm_up", None)
        if warm_up is not None:
            self._warm_up = asyncio.create_task(self._warm_up_after_servers(warm_up), name="llm-warm-up")

    def _probe_models(self) -> None:
        """In the background: keyless local models whose server does not answer are passed over
        as the default (llm/probe.py) until a call to them works."""
        models = self.parts.current.models

        async def probe() -> None:
            for name, why in (await unreachable_local_models(self.config.llm.models)).items():
                log.warning(
                    "model %s: %s", name, why, extra={"event": "model_unreachable", "model": name, "reason": why}
                )
                models.note_outcome(name, why)

        if self._model_probe is not None:
            self._model_probe.cancel()
        self._model_probe = asyncio.create_task(probe(), name="model-probe")

    async def _warm_up_after_servers(self, warm_up: Callable[[], None]) -> None:
        await self.parts.pool.wait_settled(self.parts.settings.server_start_timeout_s)
        warm_up()

    async def open_store(self) -> None:
        """Open (and migrate) the conversation store. When that fails the app still serves,
        `/readyz` says why, turns fail saying so, and opening is retried in the background
        until it works (a database that starts after the app)."""
        if await self._try_open_store():
            return
        self._store_retry = asyncio.create_task(self._retry_store(), name="store-retry")

    async def _try_open_store(self) -> bool:
        try:
            store = await open_store(self.parts.settings.database_url_resolved)
            await self.parts.pool.pins.use(store)
            await self.parts.pool.trust.use(
                TrustRows(store), legacy_file=self.parts.settings.data_dir / "tool-pins.json"
            )
        except SwitchboardError as exc:
            log.error("conversation store unavailable: %s", exc.message, extra={"event": "store_unavailable"})
            self._use_store(down_store(self.parts.settings.database_url_resolved, exc))
            return False
        was_down = self._store_retry is not None
        self._use_store(store)
        self.parts.audit.use(
            AuditStore(store, self.parts.audit.key, checkpoint_every=self.parts.audit.settings.checkpoint_every)
        )
        # Upload quotas are counted in the store: right with several processes on one file store.
        self.parts.artifacts.use_counts(
            StoreCounts(UploadRows(store), asyncio.get_running_loop(), self.parts.artifacts.stored_uploads)
        )
        if store.dialect == "postgresql" and not self.parts.relay.shared:
            await self._relay_on(store)
        if was_down:
            log.info("conversation store reached", extra={"event": "store_available"})
            await self.servers_changed(everywhere=False)  # the admin console's servers live there
        return True

    def _use_store(self, store: ConversationStore) -> None:
        self.parts.conversations.use_store(store)
        if isinstance(self.parts.pool.vault, StoreVault):
            self.parts.pool.vault.use(store)  # users' own MCP credentials live in the same database

    async def _relay_on(self, store: ConversationStore) -> None:
        """Several processes may share this database: turns are reachable from each of them."""
        from .chat.relay.postgres import PostgresRelay
        from .store.live import LiveTurns

        async def lost(conversation_id: str, owner: str) -> None:
            await self.parts.conversations.record_lost(conversation_id, LOST_REASON)

        relay = PostgresRelay(
            LiveTurns(store),
            lease_s=self.parts.settings.turn_lease_s,
            on_lost=lost,
            on_reload=self.reload_from_peer,
            on_credentials=self.parts.pool.credentials_changed_elsewhere,
            on_trust=self.parts.pool.trust.refresh,  # an administrator decided on a tool on another process
            on_admin=self.admin_from_peer,
        )
        await self.parts.relay.use(relay, self.parts.turns)  # the hub, the task board and the pool were built with it

    async def _retry_store(self) -> None:
        delay = 2.0
        while True:
            await asyncio.sleep(delay)
            if await self._try_open_store():
                return
            delay = min(delay * 2, 60.0)

    async def close(self) -> None:
        for task in (self._store_retry, self._warm_up, self._model_probe):
            if task is not None:
                task.cancel()
        await _saying_waits("the running answers", self.parts.turns.stop())
        await _saying_waits("the background tasks' pollers", self.parts.tasks.stop())
        close_llm = getattr(self.parts.llm, "aclose", None)  # the model client's connection pools
        if close_llm is not None:
            await _saying_waits("the model client's connections", close_llm())
        await _saying_waits("the MCP servers to exit", self.parts.pool.stop())
        await self.parts.pool.pins.flush()
        await _saying_waits("the audit log", self.parts.audit.close())  # what waits, and a checkpoint
        await self.parts.pool.trust.flush()
        await _saying_waits("the conversation store", self.parts.conversations.store.close())
        self.parts.tracing.shutdown()

    async def reload(self, *, everywhere: bool = True) -> dict[str, object]:
        """Re-read every config file; servers start, stop or restart as their entries changed.
        `everywhere`: the other app processes on the same database reload too."""
        config = load_app_config(self.parts.settings.defaults_dir, self.parts.settings.config_dir, self.parts.environ)
        servers = await self.parts.pool.reload(await self._use_console(config))
        self.parts.current.use_models(ModelCatalogue(config.llm, self.parts.environ))
        self.parts.auth.use_groups(config.groups)  # the next request, turn and catalogue push see them
        self.parts.engine.use_config(self.config, self.parts.current.models)
        self._probe_models()
        self.refused_reload = []
        errors = [str(e) for e in self.config.all_errors()]
        self.parts.pool.watch.reloaded()  # open sockets work out their users' groups again
        if everywhere:
            self.parts.relay.reloaded()
        log.info("config reloaded", extra={"event": "config_reload", "servers": servers, "errors": errors})
        self.parts.audit.record("config_reload", servers=servers, errors=errors)
        return {"servers": servers, "errors": errors}

    # -- the admin console (console.py): its servers live in the store, on every process ---------

    async def with_console(self, mcp: McpConfig) -> McpConfig:
        """The files' servers with the admin console's laid over them (the files' alone while the
        store cannot be read)."""
        if self.store_error is not None:
            return mcp
        try:
            rows = await ConsoleRecords(self.store).servers()
        except SwitchboardError as exc:
            log.warning("the console's servers could not be read: %s", exc.message, extra={"event": "console_unread"})
            return mcp
        rows = await with_headers(
            rows, self.parts.pool.vault, self.parts.settings.user_server_hosts
        )  # users' own servers: headers from the vault
        return overlay(mcp, rows, self.parts.environ)

    async def _use_console(self, config: AppConfig) -> McpConfig:
        """`config` from the files becomes the configuration, with the console's servers."""
        self.parts.current.use(replace(config, mcp=await self.with_console(config.mcp)), config.mcp)
        return self.config.mcp

    async def servers_changed(self, *, everywhere: bool = True) -> dict[str, str]:
        """An administrator changed a server in the console: run with it here and everywhere."""
        report = await self.parts.pool.reload(
            await self._use_console(replace(self.config, mcp=self.parts.current.files_mcp))
        )
        self.parts.engine.use_config(self.config, self.parts.current.models)
        if everywhere:
            self.parts.relay.admin_changed("servers")
        return report

    async def admin_from_peer(self, what: str, user: str) -> None:
        if what == "servers":
            await self.servers_changed(everywhere=False)
        elif what == "sessions":
            for close in self.sessions_revoked:
                close(user)

    async def reload_from_peer(self) -> None:
        """Another app process reloaded the configuration: reload here too (the same files, as the
        processes of one deployment share them), or refuse as the admin route would."""
        broken = load_app_config(
            self.parts.settings.defaults_dir, self.parts.settings.config_dir, self.parts.environ
        ).broken_files()
        if broken:
            self.refuse_reload(broken, "another app process")
            return
        await self.reload(everywhere=False)

    def refuse_reload(self, broken: list[ConfigError], by: str) -> None:
        """A reload refused for files that cannot be read: said in the log and on the console,
        and kept for /readyz and the page until a reload succeeds."""
        self.refused_reload = broken
        errors = [str(e) for e in broken]
        if unreadable_hooks := [e for e in broken if e.file.endswith("hooks.json")]:
            self.parts.engine.hooks.unreadable(unreadable_hooks)  # a policy that cannot be read denies, never allows
        log.warning(
            "config reload refused: %s",
            "; ".join(errors),
            extra={"event": "config_reload_refused", "errors": errors, "user": by},
        )
