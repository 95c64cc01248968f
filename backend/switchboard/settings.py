"""The one settings object (environment variables prefixed ``SWITCHBOARD_``)."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

__all__ = ["PROJECT_ROOT", "Settings", "is_loopback_host"]

# backend/switchboard/settings.py -> project root
PROJECT_ROOT = Path(__file__).resolve().parents[2]
_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def is_loopback_host(host: str) -> bool:
    """Whether a host name or address is this machine (a name for it, or a loopback address)."""
    host = host.strip().lower().removeprefix("[").removesuffix("]")
    if host in _LOCAL_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SWITCHBOARD_", env_file=".env", extra="ignore", frozen=True)

    host: str = "127.0.0.1"
    port: int = 8000
    # App processes (uvicorn workers). Each serves whole websocket connections and starts its
    # own MCP server connections; files and keys are shared through data_dir.
    workers: int = Field(default=1, ge=1, le=64)
    project_root: Path = PROJECT_ROOT
    defaults_dir: Path = PROJECT_ROOT / "config" / "defaults"
    config_dir: Path = PROJECT_ROOT / "config" / "overrides"
    data_dir: Path = PROJECT_ROOT / "data"
    # Uploads and artifacts: DATA_DIR/files when unset; s3://bucket/prefix for an S3-compatible store.
    files_url: str | None = None
    # Several processes on one Postgres: a process silent this long is taken for dead, and its
    # running answers end as failed.
    turn_lease_s: float = Field(default=30.0, gt=0)
    shutdown_grace_s: float = Field(default=10.0, ge=0)  # running answers may finish this long at shutdown
    log_dir: Path = PROJECT_ROOT / "logs"
    # The conversation store: SQLite in data_dir when unset; postgresql+asyncpg://... for teams.
    database_url: str | None = None

    auth_mode: Literal["dev", "proxy"] = "dev"
    dev_user: str = "dev@localhost"
    auth_header: str = "X-User-Email"
    proxy_secret: SecretStr | None = None
    groups_header: str | None = None  # e.g. X-User-Groups (comma-separated), trusted only with the proxy secret
    group_service_url: str | None = None  # GET {url}?user=EMAIL -> JSON list of group names
    group_service_ttl_s: float = 300.0
    allowed_origins: list[str] = Field(default_factory=list)
    # Host names the app answers besides localhost, 127.0.0.1, [::1] and PUBLIC_URL's host
    # ("*.example.com" for subdomains, "*" for any): anything else is refused (DNS rebinding).
    allowed_hosts: list[str] = Field(default_factory=list)
    public_url: str | None = None
    # The OAuth client ID of this host as a URL (a client ID metadata document): by default the
    # document the app serves at {public_url}/oauth/client-metadata.json when PUBLIC_URL is https.
    oauth_client_metadata_url: str | None = None
    oauth_client_metadata: bool = True  # false: never offer it (the authorization servers cannot reach this host)
    # Where MCP Apps run: an origin other than the page's that reaches this same app (e.g.
    # https://sandbox.example.com). Unset: http://sandbox.localhost:PORT for pages on a loopback
    # name, and no apps elsewhere (web/sandbox/origin.py).
    sandbox_origin: str | None = None
    metrics_token: SecretStr | None = None  # a scraper sends it as `Authorization: Bearer ...` to read /metrics
    secret_key: SecretStr | None = None  # signs file URLs; generated and kept in data_dir when unset

    round_limit: int = 10
    max_tool_calls_per_round: int = Field(default=32, ge=1)  # calls past these limits are not run
    max_tool_calls_per_turn: int = Field(default=128, ge=1)
    max_answer_chars: int = Field(default=200_000, ge=1000)  # a longer answer is cut (finish_reason length)
    turn_grace_s: float = 30.0  # a turn nobody listens to any more is cancelled after this
    # Per-user limits (docs/security.md): answers being written at once, event streams open at once
    # (each /api/chat, /v1 stream, websocket follow or attach), and a conversation's stored text.
    max_turns_per_user: int = Field(default=8, ge=1)
    max_streams_per_user: int = Field(default=32, ge=1)
    # Websockets (page tabs) one user may hold open in one app process; one more is closed (1008).
    max_sockets_per_user: int = Field(default=32, ge=1)
    max_conversation_chars: int = Field(default=10_000_000, ge=100_000)
    # A JSON request body on /api/... and /v1/... (uploads have max_upload_bytes): larger is 413.
    max_request_bytes: int = Field(default=4 * 1024 * 1024, ge=64 * 1024)
    # Incognito conversations live in memory only: this many per user (least recently used dropped),
    # each dropped after this long unused; its uploads and artifacts are deleted when it goes.
    incognito_per_user: int = Field(default=20, ge=1)
    incognito_idle_s: float = Field(default=24 * 3600, gt=0)
    llm_max_attempts: int = 3  # model calls retried on 429/5xx/connection errors, with backoff
    llm_max_retry_wait_s: float = 30.0
    # OpenAI-compatible models are streamed through the OpenAI SDK directly; false: all through litellm.
    llm_direct: bool = True
    approval_timeout_s: float = 300.0  # an unanswered approval counts as denied
    elicitation_timeout_s: float = 600.0
    task_lease_s: float = Field(
        default=30.0, gt=0
    )  # a background task held by a process that died is taken over after this
    task_max_poll_s: float = Field(default=30.0, gt=0)  # the longest wait between two polls of one task
    # Background tasks running at once per user; a call that would start one more fails, saying so.
    max_tasks_per_user: int = Field(default=16, ge=1)
    max_tool_result_chars: int = 20_000  # what the model sees of one tool result
    max_result_event_chars: int = 50_000  # what the browser gets of V2 results
    max_artifact_bytes: int = 25 * 1024 * 1024
    max_upload_bytes: int = 50 * 1024 * 1024
    max_upload_bytes_per_user: int = 500 * 1024 * 1024
    max_uploads_per_user: int = Field(default=1000, ge=0)  # stored uploads per user, empty files included
    file_url_ttl_s: int = 3600  # how long a signed file URL handed to a tool stays valid
    retention_days: float | None = 30  # uploads and artifacts older than this are deleted
    tool_concurrency_per_server: int = 4
    server_start_timeout_s: float = 60.0
    # Bundled stdio servers (backend/mcp/) forked from one parent that has imported fastmcp
    # (tools/servers/forked.py) instead of each importing it afresh; false starts each on its own.
    fork_servers: bool = True
    # MCP 2026-07-28 multi round-trip requests: rounds of `input_required` answered before a
    # server that keeps asking is cut off (its call fails with a message that says so).
    mcp_input_rounds: int = Field(default=10, ge=1, le=1000)
    # MCP Apps: requests of one mounted app (per user and call), as a token bucket
    app_requests_per_s: float = Field(default=10.0, gt=0)
    app_requests_burst: int = Field(default=20, ge=1)
    app_cache_s: float = Field(default=60.0, ge=0)  # an app's ui:// resource is read again after this
    # The audit log (docs/audit.md): its checkpoint signing key (base64 of a 32-byte Ed25519 seed, or a
    # PEM key; made in data_dir when unset), tool arguments kept as a sha256 ("hash") or whole ("full"),
    # and records kept this many days (whole checkpointed spans; unset: kept for ever).
    audit_key: SecretStr | None = None
    audit_arguments: Literal["hash", "full"] = "hash"
    audit_retention_days: float | None = Field(default=None, gt=0)
    # Users' own remote servers (docs/servers.md): "remote" lets each user add some, "off" none;
    # hosts listed here skip the endpoint policy (e.g. an intranet host), comma-separated.
    user_servers: Literal["remote", "off"] = "remote"
    max_servers_per_user: int = Field(default=20, ge=0)
    user_server_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)

    @field_validator("user_server_hosts", mode="before")
    @classmethod
    def _split_user_server_hosts(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip().lower() for part in value.split(",") if part.strip()]
        return value

    # MCP registries (API v0.1) the page's "Browse servers" lists, comma-separated; empty: none.
    registry_urls: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["https://registry.modelcontextprotocol.io"]
    )

    @field_validator("registry_urls", mode="before")
    @classmethod
    def _split_registry_urls(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip().rstrip("/") for part in value.split(",") if part.strip()]
        return value

    @property
    def database_url_resolved(self) -> str:
        return self.database_url or f"sqlite+aiosqlite:///{self.data_dir}/switchboard.db"

    @property
    def base_url(self) -> str:
        return (self.public_url or f"http://{self.host}:{self.port}").rstrip("/")

    @property
    def client_metadata_url(self) -> str | None:
        """Where authorization servers that take client ID metadata documents read this host's:
        only an https URL qualifies, so none for a plain-http deployment (they register instead)."""
        if not self.oauth_client_metadata:
            return None
        if self.oauth_client_metadata_url:
            return self.oauth_client_metadata_url
        return f"{self.base_url}/oauth/client-metadata.json" if self.base_url.startswith("https://") else None
