"""The parts of a running host, built once from settings and config, each from the ones before it
(constructor arguments, in dependency order; no part is wired after it is built), and handed to
the web layer (tests build their own). What they do once built (start, the store, reload, close)
is lifecycle.py, the one place the running host changes."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from .audit.keys import load_key
from .audit.writer import Auditor, AuditSettings
from .chat import (
    CallRunner,
    CallSettings,
    ChatEngine,
    ConversationLimits,
    Conversations,
    TaskPoller,
    TaskSettings,
    TurnHub,
    TurnLimits,
    UserLimits,
)
from .chat.apps.bridge import AppBridge, AppLimits
from .chat.calls.results import CallResults
from .chat.conversation_ids import ConversationIds, id_key
from .chat.incognito.sealed import IncognitoSeal, seal_key
from .chat.relay.seam import SwitchedRelay
from .chat.running import RunningTurns
from .chat.tasks.board import TaskBoard
from .config import AppConfig, load_app_config
from .config.loader import McpConfig
from .credentials import SecretBox, StoreVault, credential_key
from .errors import StoreUnavailable, SwitchboardError
from .files.artifacts import ArtifactStore
from .files.backends import open_files
from .files.signing import UrlSigner, load_or_create_key
from .identity.users import Authenticator
from .lifecycle import CurrentConfig, Lifecycle, LifeParts
from .llm import DeferredLLMClient, ModelCatalogue
from .llm.types import LLMStream
from .policy import Hooks
from .registries import RegistryCatalogue
from .settings import Settings
from .store import ConversationStore, down_store
from .telemetry import Tracing, model_call
from .tools import ServerPool, ServerStatus
from .tools.servers.launch import EarlyStarts
from .users_seen import UsersSeen

__all__ = ["Services", "build_services"]

log = logging.getLogger("switchboard")


@dataclass(frozen=True)
class Services:
    """The parts, set once (frozen): what changes while the host runs changes inside a part, through
    its methods (`life` for start, the store, reload and close; `current` for the configuration)."""

    settings: Settings
    environ: Mapping[str, str]
    current: CurrentConfig  # the configuration and model catalogue now (a reload replaces them)
    auth: Authenticator
    pool: ServerPool
    llm: LLMStream
    artifacts: ArtifactStore
    signer: UrlSigner
    engine: ChatEngine
    conversations: Conversations
    turns: TurnHub
    tasks: TaskPoller
    apps: AppBridge  # MCP Apps: mounting them, and their requests through the host
    audit: Auditor  # the audit log: `audit.record(kind, ...)` for every security-relevant fact (audit/)
    life: Lifecycle  # start, the store, reload, close (lifecycle.py)
    tracing: Tracing
    registries: RegistryCatalogue  # MCP registries, cached
    users_seen: UsersSeen = field(default_factory=UsersSeen)  # noted by each signed-in request

    @property
    def config(self) -> AppConfig:
        return self.current.config

    @property
    def models(self) -> ModelCatalogue:
        return self.current.models

    @property
    def files_mcp(self) -> McpConfig:
        """The files' servers alone (`config.mcp` has the admin console's laid over them)."""
        return self.current.files_mcp

    @property
    def store(self) -> ConversationStore:
        return self.conversations.store

    @property
    def store_error(self) -> str | None:
        """Why the conversation store cannot be used now (it could not be opened), or None."""
        return self.life.store_error


def _log_status(status: ServerStatus) -> None:
    log.info(
        "server %s is %s",
        status.name,
        status.status,
        extra={
            "event": "server_status",
            "server": status.name,
            "status": status.status,
            "reason": status.reason,
            "ready_after_s": status.ready_after_s,
            "tools": status.tool_count,
            "protocol_version": status.protocol_version,
        },
    )


def _llm_reporter(config: Callable[[], AppConfig]) -> Callable[[str, float, object, SwitchboardError | None], None]:
    """What happens after every model call: a log line, a span and the metrics."""

    def report(model: str, duration_s: float, usage: object, error: SwitchboardError | None) -> None:
        _log_llm_call(model, duration_s, usage, error)
        provider = next(
            (m.model.split("/", 1)[0] for m in config().llm.models if m.name == model and "/" in m.model), None
        )
        model_call(model, provider, duration_s, usage, error.code if error else None)

    return report


def _log_llm_call(model: str, duration_s: float, usage: object, error: SwitchboardError | None) -> None:
    log.info(
        "llm call",
        extra={
            "event": "llm_call",
            "model": model,
            "duration_ms": int(duration_s * 1000),
            "prompt_tokens": getattr(usage, "prompt_tokens", None),
            "completion_tokens": getattr(usage, "completion_tokens", None),
            "error": f"{error.code}: {error.message}" if error else None,
        },
    )


def build_services(
    settings: Settings,
    *,
    config: AppConfig | None = None,
    llm: LLMStream | None = None,
    environ: Mapping[str, str] | None = None,
    early: EarlyStarts | None = None,
) -> Services:
    """`early`: stdio server processes already started (`switchboard serve` starts them before
    it imports the app), for the pool's connections to adopt."""
    environ = os.environ if environ is None else environ
    config = config or load_app_config(settings.defaults_dir, settings.config_dir, environ)
    not_open = down_store(settings.database_url_resolved, StoreUnavailable("the conversation store is not open yet"))
    models = ModelCatalogue(config.llm, environ)
    current = CurrentConfig(config, models)  # the model reporter reads the current (reloaded) config through it
    relay = SwitchedRelay()  # one process until the store opens on PostgreSQL (lifecycle.py)
    pool = ServerPool(
        config.mcp,
        project_root=settings.project_root,
        log_dir=settings.log_dir,
        init_timeout_s=settings.server_start_timeout_s,
        input_rounds=settings.mcp_input_rounds,
        max_artifact_bytes=settings.max_artifact_bytes,
        concurrency_per_server=settings.tool_concurrency_per_server,
        on_status=_log_status,
        files_origin=settings.base_url,  # where stdio servers may fetch signed file links
        client_metadata_url=settings.client_metadata_url,
        vault=StoreVault(
            SecretBox(
                credential_key(
                    settings.secret_key.get_secret_value() if settings.secret_key else None, settings.data_dir
                )
            ),
            not_open,
        ),
        early=early,
        dev_auth=settings.auth_mode == "dev",
        app_cache_s=settings.app_cache_s,
        peers=relay,
    )
    artifacts = ArtifactStore(open_files(settings.files_url, settings.data_dir / "files"))
    key = (
        settings.secret_key.get_secret_value().encode()
        if settings.secret_key
        else load_or_create_key(settings.data_dir / "secret.key")
    )
    signer = UrlSigner(key, settings.base_url, settings.file_url_ttl_s)
    llm = llm or DeferredLLMClient(
        on_call=_llm_reporter(lambda: current.config),
        environ=environ,
        max_attempts=settings.llm_max_attempts,
        max_delay_s=settings.llm_max_retry_wait_s,
        direct=settings.llm_direct,
    )
    conversations = Conversations(
        not_open,
        artifacts,
        ConversationLimits(  # the store opens at start-up
            max_chars=settings.max_conversation_chars,
            incognito_per_user=settings.incognito_per_user,
            incognito_idle_s=settings.incognito_idle_s,
        ),
        seal=IncognitoSeal(seal_key(key), max_age_s=settings.incognito_idle_s),
        ids=ConversationIds(id_key(key)),
    )
    call_settings = CallSettings(
        max_tool_result_chars=settings.max_tool_result_chars,
        max_result_event_chars=settings.max_result_event_chars,
        approval_timeout_s=settings.approval_timeout_s,
        elicitation_timeout_s=settings.elicitation_timeout_s,
    )
    hooks = Hooks()  # hooks.json: the engine hands it the configuration's
    running = RunningTurns(conversations.ids)  # the hub's turns, which the task poller waits for
    board = TaskBoard(relay)  # background tasks' events and questions, for their owners' pages
    tasks = TaskPoller(
        pool,
        conversations,
        CallResults(
            pool,
            artifacts,
            max_event_chars=call_settings.max_result_event_chars,
            max_model_chars=call_settings.max_tool_result_chars,
        ),
        hooks,
        board=board,
        is_turn_running=running.is_running,
        settings=TaskSettings(
            lease_s=settings.task_lease_s,
            max_poll_s=settings.task_max_poll_s,
            question_timeout_s=settings.elicitation_timeout_s,
            max_per_user=settings.max_tasks_per_user,
            input_rounds=settings.mcp_input_rounds,
        ),
    )
    audit = Auditor(
        load_key(settings.audit_key.get_secret_value() if settings.audit_key else None, settings.data_dir),
        AuditSettings(full_arguments=settings.audit_arguments == "full", retention_days=settings.audit_retention_days),
    )
    calls = CallRunner(
        pool, artifacts, config.compliance, call_settings, signer=signer, tasks=tasks, audit=audit, hooks=hooks
    )
    limits = TurnLimits(
        round_limit=settings.round_limit,
        calls_per_round=settings.max_tool_calls_per_round,
        calls_per_turn=settings.max_tool_calls_per_turn,
        answer_chars=settings.max_answer_chars,
    )
    engine = ChatEngine(llm=llm, models=models, pool=pool, calls=calls, files=artifacts, config=config, limits=limits)
    auth = Authenticator(settings, config.groups)
    turns = TurnHub(
        engine,
        conversations,
        auth,
        grace_s=settings.turn_grace_s,
        limits=UserLimits(turns=settings.max_turns_per_user, streams=settings.max_streams_per_user),
        relay=relay,
        shutdown_grace_s=settings.shutdown_grace_s,
        task_questions=board,
        running=running,
    )
    tracing = Tracing.from_environment(environ)
    life = Lifecycle(
        LifeParts(
            settings=settings,
            environ=environ,
            current=current,
            auth=auth,
            pool=pool,
            llm=llm,
            artifacts=artifacts,
            engine=engine,
            conversations=conversations,
            turns=turns,
            relay=relay,
            tasks=tasks,
            audit=audit,
            tracing=tracing,
        )
    )
    return Services(
        settings=settings,
        environ=environ,
        current=current,
        auth=auth,
        pool=pool,
        llm=llm,
        artifacts=artifacts,
        signer=signer,
        engine=engine,
        conversations=conversations,
        turns=turns,
        tasks=tasks,
        apps=AppBridge(turns, calls, pool, AppLimits(settings.app_requests_per_s, settings.app_requests_burst)),
        audit=audit,
        life=life,
        tracing=tracing,
        registries=RegistryCatalogue(settings.registry_urls),
    )
