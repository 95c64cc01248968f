"""The parts of a running host, built once from settings and config and
handed to the web layer (tests build their own)."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass

from .artifacts import ArtifactStore
from .auth import Authenticator
from .chat import CallRunner, CallSettings, ChatEngine
from .config import AppConfig, load_app_config
from .llm import LLMClient, ModelCatalogue
from .settings import Settings
from .tools import ServerPool, ServerStatus

__all__ = ["Services", "build_services"]

log = logging.getLogger("switchboard")


@dataclass
class Services:
    settings: Settings
    config: AppConfig
    auth: Authenticator
    pool: ServerPool
    llm: LLMClient
    models: ModelCatalogue
    artifacts: ArtifactStore
    engine: ChatEngine


def _log_status(status: ServerStatus) -> None:
    log.info(
        "server %s is %s",
        status.name,
        status.status,
        extra={"event": "server_status", "server": status.name, "status": status.status,
               "reason": status.reason, "ready_after_s": status.ready_after_s, "tools": status.tool_count},  # fmt: skip
    )


def _log_llm_call(model: str, duration_s: float, usage: object, error: str | None) -> None:
    tokens = getattr(usage, "total_tokens", None)
    log.info(
        "llm call",
        extra={"event": "llm_call", "model": model, "duration_ms": int(duration_s * 1000), "tokens": tokens, "error": error},
    )


def build_services(
    settings: Settings,
    *,
    config: AppConfig | None = None,
    llm: LLMClient | None = None,
    environ: Mapping[str, str] | None = None,
) -> Services:
    environ = os.environ if environ is None else environ
    config = config or load_app_config(settings.defaults_dir, settings.config_dir, environ)
    pool = ServerPool(
        config.mcp,
        project_root=settings.project_root,
        log_dir=settings.log_dir,
        init_timeout_s=settings.server_start_timeout_s,
        max_artifact_bytes=settings.max_artifact_bytes,
        concurrency_per_server=settings.tool_concurrency_per_server,
        on_status=_log_status,
    )
    artifacts = ArtifactStore(settings.data_dir / "files")
    llm = llm or LLMClient(on_call=_log_llm_call, environ=environ)
    models = ModelCatalogue(config.llm, environ)
    calls = CallRunner(
        pool,
        artifacts,
        config.compliance,
        CallSettings(
            max_tool_result_chars=settings.max_tool_result_chars,
            max_result_event_chars=settings.max_result_event_chars,
        ),
        base_url=settings.base_url,
    )
    engine = ChatEngine(llm=llm, models=models, pool=pool, calls=calls, config=config, round_limit=settings.round_limit)
    return Services(
        settings=settings,
        config=config,
        auth=Authenticator(settings, config.groups),
        pool=pool,
        llm=llm,
        models=models,
        artifacts=artifacts,
        engine=engine,
    )
