"""Streaming straight to OpenAI-compatible endpoints over plain HTTP.

For a model entry that litellm resolves to the OpenAI chat-completions wire
format (OpenAI itself, `openai/...` with an `api_base` such as vLLM, Ollama's
OpenAI endpoint, LM Studio, llama.cpp; `hosted_vllm/`, `lm_studio/`,
`llamafile/`, `openrouter/`), `plan_route` asks litellm once per entry where
the endpoint is and which request options it would send (`max_tokens` or
`max_completion_tokens`, temperature, extra options). Each call then only posts
that body as JSON over the pool's aiohttp session and reads the server-sent
events from the bytes as they arrive, each chunk a plain dict: no per-call
litellm work, no SDK request building, no typed chunk objects. A model call's
CPU is then below a bare httpx stream's.

One session (one connection pool, a kept connection per endpoint) is kept in a
`DirectPool` and reused until the pool is closed (`llm/direct_wire.py`).
Failures go straight into the error tree (`llm/direct_errors.py`), each of the
kind litellm's path gets for the same answer, with the provider's own message
(`tests/unit/llm/test_llm_paths.py` runs every failure through both paths).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import AsyncGenerator, AsyncIterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import aiohttp
import httpx
import litellm
import yarl
from litellm.litellm_core_utils.core_helpers import map_finish_reason
from litellm.llms.openai.chat.o_series_transformation import OpenAIOSeriesConfig
from litellm.types.utils import all_litellm_params
from litellm.utils import ProviderConfigManager, get_optional_params

from switchboard.config.models import ModelConfig
from switchboard.llm._assembly import ToolCallAssembler, completed, usage_from
from switchboard.llm.direct_errors import DirectFailures
from switchboard.llm.direct_wire import DirectPool, DirectStream
from switchboard.llm.messages import messages_json
from switchboard.llm.types import Completed, TextDelta

__all__ = [
    "DIRECT_PROVIDERS",
    "KEYLESS_PROVIDERS",
    "USER_AGENT",
    "DirectFailures",
    "DirectPool",
    "DirectStream",
    "Route",
    "direct_events",
    "is_keyless",
    "open_stream",
    "plan_route",
    "request_body",
]  # DirectPool, DirectStream: from direct_wire; DirectFailures: from direct_errors

logger = logging.getLogger("switchboard.llm")

# litellm providers whose chat requests are plain OpenAI chat completions at an OpenAI-style base URL.
DIRECT_PROVIDERS = frozenset({"openai", "hosted_vllm", "lm_studio", "llamafile", "openrouter"})

# Where litellm looks when the entry names no api_base / no key (its own order).
_BASE_ENV = {"openai": ("OPENAI_BASE_URL", "OPENAI_API_BASE"), "openrouter": ("OPENROUTER_API_BASE",)}
_BASE_DEFAULT = {"openai": "https://api.openai.com/v1", "openrouter": "https://openrouter.ai/api/v1"}
_KEY_ENV = {"openai": ("OPENAI_API_KEY",), "openrouter": ("OPENROUTER_API_KEY", "OR_API_KEY")}
_OPENROUTER_HEADERS = {"OR_SITE_URL": "HTTP-Referer", "OR_APP_NAME": "X-Title"}
USER_AGENT = "Switchboard (direct OpenAI-compatible client)"
_UNSET_TIMEOUT_S = 600.0  # what litellm waits for each read (and the connection) when no timeout is given


@dataclass(frozen=True)
class Route:
    """How one model entry is called directly; worked out once per entry."""

    provider: str  # litellm's name for it, e.g. "openai", "hosted_vllm"
    base_url: str
    provider_key: str | None  # the key litellm would use when the entry names none (None: keyless)
    body: dict[str, Any]  # model and request options, as litellm would send them
    max_tokens_key: str  # "max_tokens", or "max_completion_tokens" (OpenAI's newer models)
    headers: dict[str, str] = field(default_factory=dict)  # the entry's own (extra_headers, OpenRouter's)
    keyless: bool = False  # an api_base of the site's and no api_key_env: no Authorization header
    organization: str | None = None  # OpenAI-Organization / OpenAI-Project, from OPENAI_ORG_ID /
    project: str | None = None  # OPENAI_PROJECT_ID as the OpenAI SDK sends them on litellm's path

    @cached_property
    def url(self) -> httpx.URL:
        return httpx.URL(f"{self.base_url}/chat/completions")

    @cached_property
    def wire_url(self) -> yarl.URL:
        return yarl.URL(str(self.url), encoded=True)

    @cached_property
    def request_headers(self) -> dict[str, str]:
        """Every header of a request but the key's."""
        fixed = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": USER_AGENT}
        if self.organization:
            fixed["OpenAI-Organization"] = self.organization
        if self.project:
            fixed["OpenAI-Project"] = self.project
        return fixed | self.headers


def plan_route(model: ModelConfig, *, reports_usage: bool, environ: Mapping[str, str] | None = None) -> Route | None:
    """The direct route for a model entry, or None: litellm serves it (another provider,
    `direct: false`, options only litellm understands, or anything litellm objects to,
    which its own call then reports)."""
    environ = os.environ if environ is None else environ
    if not model.direct or model.is_demo:
        return None
    litellm_only = sorted(key for key in model.extra if key in all_litellm_params)
    if litellm_only:
        logger.info("model %s goes through litellm: its extra options %s are litellm's own", model.name, litellm_only)
        return None
    try:
        name, provider, dynamic_key, resolved_base = litellm.get_llm_provider(
            model=model.model, api_base=model.api_base
        )
    except Exception:  # the call reports it (client._check_provider)
        return None
    if provider not in DIRECT_PROVIDERS:
        return None
    if provider == "openai" and isinstance(
        ProviderConfigManager.get_provider_chat_config(model=name, provider=litellm.LlmProviders(provider)),
        OpenAIOSeriesConfig,
    ):
        return None  # litellm rewrites the messages of OpenAI's o-series models
    base_url = (
        model.api_base or resolved_base or _first(environ, _BASE_ENV.get(provider, ())) or _BASE_DEFAULT.get(provider)
    )
    if not base_url:
        return None
    extra: dict[str, Any] = dict(model.extra)
    headers = {str(k): str(v) for k, v in dict(extra.pop("extra_headers", None) or {}).items()}
    extra_body = dict(extra.pop("extra_body", None) or {})
    try:
        params = get_optional_params(
            model=name,
            custom_llm_provider=provider,
            temperature=model.temperature,
            max_tokens=1,  # a probe: which key carries the limit for this model
            stream=True,
            stream_options={"include_usage": True} if reports_usage else None,
            **extra,
        )
    except Exception:  # e.g. an option this model refuses: litellm's call says so
        return None
    max_tokens_key = "max_completion_tokens" if "max_completion_tokens" in params else "max_tokens"
    params.pop(max_tokens_key, None)
    params.pop("stream", None)
    litellm_body = dict(params.pop("extra_body", None) or {})  # options litellm does not know go here
    body = {"model": name, **params, **litellm_body, **extra_body}
    if provider == "openrouter":
        headers = {header: environ[env] for env, header in _OPENROUTER_HEADERS.items() if environ.get(env)} | headers
    keyless = is_keyless(model, provider)
    provider_key = None if keyless else dynamic_key or _first(environ, _KEY_ENV.get(provider, ()))
    return Route(
        provider,
        base_url.rstrip("/"),
        provider_key,
        body,
        max_tokens_key,
        headers,
        keyless,
        environ.get("OPENAI_ORG_ID") or None,
        environ.get("OPENAI_PROJECT_ID") or None,
    )


# OpenAI-compatible providers whose key variable (OPENAI_API_KEY, ...) belongs to the provider's
# own endpoint: an entry of theirs with an api_base of the site's and no api_key_env is a keyless
# local server (Ollama's /v1, vLLM, LM Studio, llama.cpp), never sent that key.
KEYLESS_PROVIDERS = frozenset({"openai", "hosted_vllm", "lm_studio", "llamafile"})


def is_keyless(model: ModelConfig, provider: str) -> bool:
    return bool(model.api_base) and not model.api_key_env and provider in KEYLESS_PROVIDERS


async def open_stream(
    pool: DirectPool,
    route: Route,
    api_key: str | None,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    *,
    failures: DirectFailures,
    timeout_s: float | None,
    max_tokens: int | None,
) -> DirectStream:
    """Sends the request; returns once the provider answered with a stream, or raises the
    `LLMError` that `failures` makes of what went wrong. `timeout_s` limits each wait (connect,
    write, every read, and the wait for a pooled connection)."""
    key = api_key or route.provider_key
    if key is None and not route.keyless:  # the SDK refuses as well on litellm's path
        raise failures.no_key(" or ".join(_KEY_ENV.get(route.provider, ("its API key variable",))))
    headers = dict(route.request_headers)
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    wait = _UNSET_TIMEOUT_S if timeout_s is None else timeout_s
    # the same definitions turn after turn: their JSON is kept (`pool.tools_json`)
    content = request_body(route, messages, pool.tools_json(tools) if tools else None, max_tokens)
    url = route.url
    for _ in range(_MOST_REDIRECTS + 1):
        try:
            response = await pool.post(
                route.wire_url if url is route.url else yarl.URL(str(url), encoded=True), headers, content, wait
            )
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise failures.unreached(exc) from exc
        if 200 <= response.status < 300:
            return DirectStream(response, failures)
        try:
            body = await response.read()
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise failures.broke(exc, received=False) from exc
        finally:
            response.release()
        answered = {k: v for k, v in response.headers.items()}
        if response.status >= 400:
            raise failures.answered(response.status, answered, body)
        target = _redirected(response.status, answered.get("Location") or answered.get("location"), url)
        if target is None:
            where = answered.get("Location") or answered.get("location")
            why = (
                f"the endpoint answered HTTP {response.status}{f' to {url.join(where)}' if where else ''} "
                "instead of a stream; set the model's api_base to the address it points to"
            )
            raise failures.answered(response.status, answered, body, why)
        url = target  # the same endpoint at another path or over https, as the SDK follows
    raise failures.answered(response.status, {}, b"", f"the endpoint redirected more than {_MOST_REDIRECTS} times")


def request_body(route: Route, messages: list[dict[str, Any]], tools_json: str | None, max_tokens: int | None) -> bytes:
    """The request's JSON, as `json.dumps` makes it of the whole request (options, stream, limit,
    messages, tools), but with the messages' JSON joined from what was kept of each
    (`messages_json`): a long conversation's request encodes only its new messages."""
    head: dict[str, Any] = {**route.body, "stream": True}
    if max_tokens:
        head[route.max_tokens_key] = max_tokens
    text = json.dumps(head, ensure_ascii=False)
    tools = f', "tools": {tools_json}' if tools_json is not None else ""
    return f'{text[:-1]}, "messages": {messages_json(messages)}{tools}}}'.encode()


def _redirected(status: int, location: str | None, url: httpx.URL) -> httpx.URL | None:
    """Where a 307/308 answer sends the request: on the same host only (the key goes along);
    None for any other answer below 400."""
    target = url.join(location) if location else None
    same_host = (
        target is not None and target.host == url.host and (target.scheme == url.scheme or target.scheme == "https")
    )
    return target if status in (307, 308) and same_host else None


_MOST_REDIRECTS = 3


async def direct_events(
    batches: AsyncIterable[list[dict[str, Any]]],
) -> AsyncGenerator[TextDelta | Completed, None]:
    """The provider's chunks, a read's worth at a time, as events: the text of each read as
    one `TextDelta`, then one Completed."""
    assembler = ToolCallAssembler()
    finish_reason: str | None = None
    usage = None
    async for batch in batches:
        texts: list[str] = []
        for chunk in batch:
            raw = chunk.get("usage")
            if isinstance(raw, dict):
                usage = (
                    usage_from(raw.get("prompt_tokens"), raw.get("completion_tokens"), raw.get("total_tokens")) or usage
                )
            for choice in chunk.get("choices") or ():
                finish_reason = choice.get("finish_reason") or finish_reason
                delta = choice.get("delta") or {}
                for fragment in delta.get("tool_calls") or ():
                    function = fragment.get("function") or {}
                    assembler.add(
                        fragment.get("index"),
                        fragment.get("id") or "",
                        function.get("name") or "",
                        function.get("arguments") or "",
                    )
                content = delta.get("content")
                if content and isinstance(content, str):
                    texts.append(content)
        if texts:
            yield TextDelta(texts[0] if len(texts) == 1 else "".join(texts))
    yield completed(assembler, map_finish_reason(finish_reason) if finish_reason else None, usage)


def _first(environ: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    return next((environ[name] for name in names if environ.get(name)), None)
