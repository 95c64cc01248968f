"""The parts of a running host, built once from settings and config and
handed to the web layer (tests build their own). What they do once built
(start, the store, reload, close) is lifecycle.py."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping

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
from .chat.conversation_ids import ConversationIds, id_key
from .chat.incognito.sealed import IncognitoSeal, seal_key
from .config import AppConfig, load_app_config
from .credentials import SecretBox, StoreVault, credential_key
from .errors import StoreUnavailable, SwitchboardError
from .files.artifacts import ArtifactStore
from .files.backends import open_files
from .files.signing import UrlSigner, load_or_create_key
from .identity.users import Authenticator
from .lifecycle import Services
from .llm import DeferredLLMClient, ModelCatalogue
from .llm.types import LLMStream
from .registries import RegistryCatalogue
from .settings import Settings
from .store import down_store
from .telemetry import Tracing, model_call
from .tools import ServerPool, ServerStatus
from .tools.servers.launch import EarlyStarts

__all__ = ["Services", "build_services"]  # Services lives in lifecycle.py

log = logging.getLogger("switchboard")


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
    built: list[Services] = []  # the model reporter reads the current (reloaded) config through it
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
    )
    artifacts = ArtifactStore(open_files(settings.files_url, settings.data_dir / "files"))
    key = (
        settings.secret_key.get_secret_value().encode()
        if settings.secret_key
        else load_or_create_key(settings.data_dir / "secret.key")
    )
    signer = UrlSigner(key, settings.base_url, settings.file_url_ttl_s)
    llm = llm or DeferredLLMClient(
        on_call=_llm_reporter(lambda: built[0].config if built else config),
        environ=environ,
        max_attempts=settings.llm_max_attempts,
        max_delay_s=settings.llm_max_retry_wait_s,
        direct=settings.llm_direct,
    )
    models = ModelCatalogue(config.llm, environ)
    calls = CallRunner(
        pool,
        artifacts,
        config.compliance,
        CallSettings(
            max_tool_result_chars=settings.max_tool_result_chars,
            max_result_event_chars=settings.max_result_event_chars,
            approval_timeout_s=settings.approval_timeout_s,
            elicitation_timeout_s=settings.elicitation_timeout_s,
        ),
        signer=signer,
    )
    limits = TurnLimits(
        round_limit=settings.round_limit,
        calls_per_round=settings.max_tool_calls_per_round,
        calls_per_turn=settings.max_tool_calls_per_turn,
        answer_chars=settings.max_answer_chars,
    )
    engine = ChatEngine(llm=llm, models=models, pool=pool, calls=calls, files=artifacts, config=config, limits=limits)
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
    auth = Authenticator(settings, config.groups)
    turns = TurnHub(
        engine,
        conversations,
        auth,
        grace_s=settings.turn_grace_s,
        limits=UserLimits(turns=settings.max_turns_per_user, streams=settings.max_streams_per_user),
        shutdown_grace_s=settings.shutdown_grace_s,
    )
    tasks = TaskPoller(
        pool,
        conversations,
        calls,
        is_turn_running=lambda owner, cid: turns.running(owner, cid) is not None,
        settings=TaskSettings(
            lease_s=settings.task_lease_s,
            max_poll_s=settings.task_max_poll_s,
            question_timeout_s=settings.elicitation_timeout_s,
            max_per_user=settings.max_tasks_per_user,
            input_rounds=settings.mcp_input_rounds,
        ),
    )
    calls.tasks = tasks
    audit = Auditor(
        load_key(settings.audit_key.get_secret_value() if settings.audit_key else None, settings.data_dir),
        AuditSettings(full_arguments=settings.audit_arguments == "full", retention_days=settings.audit_retention_days),
    )
    calls.audit = audit
    turns.task_questions = tasks.board
    tasks.board.share = lambda user, text: turns.relay.to_user(user, text)  # their pages on other processes
    tasks.board.opened = lambda user, page: turns.relay.page_opened(user, page)
    services = Services(
        settings=settings,
        config=config,
        auth=auth,
        pool=pool,
        llm=llm,
        models=models,
        artifacts=artifacts,
        signer=signer,
        engine=engine,
        conversations=conversations,
        turns=turns,
        tasks=tasks,
        environ=environ,
        apps=AppBridge(turns, calls, pool, AppLimits(settings.app_requests_per_s, settings.app_requests_burst)),
        tracing=Tracing.from_environment(environ),
        audit=audit,
        registries=RegistryCatalogue(settings.registry_urls),
    )
    built.append(services)
    return services
