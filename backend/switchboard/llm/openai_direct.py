"""Streaming straight to OpenAI-compatible endpoints through the openai SDK.

For a model entry that litellm resolves to the OpenAI chat-completions wire
format (OpenAI itself, `openai/...` with an `api_base` such as vLLM, Ollama's
OpenAI endpoint, LM Studio, llama.cpp; `hosted_vllm/`, `lm_studio/`,
`llamafile/`, `openrouter/`), `plan_route` asks litellm once per entry where
the endpoint is and which request options it would send (`max_tokens` or
`max_completion_tokens`, temperature, extra options). Each call then only posts
that body with the SDK's `AsyncOpenAI` and reads the server-sent chunks as
plain dicts: no per-call litellm work, no typed request transform, no typed
chunk objects. That is most of a call's CPU.

One `AsyncOpenAI` (one httpx connection pool) per (base URL, key) is kept in a
`DirectPool` and reused until the pool is closed. Failures are turned into the
exceptions litellm would have raised for the same response (litellm's own
mapping, `as_litellm`), so the error tree, the retries and the messages are the
same on both paths.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import litellm
import openai
from litellm import exceptions as lx
from litellm.litellm_core_utils.core_helpers import map_finish_reason
from litellm.litellm_core_utils.exception_mapping_utils import exception_type
from litellm.llms.openai.common_utils import OpenAIError as LitellmOpenAIError
from litellm.llms.openai.chat.o_series_transformation import OpenAIOSeriesConfig
from litellm.types.utils import all_litellm_params
from litellm.utils import ProviderConfigManager, get_optional_params

from switchboard.config.models import ModelConfig
from switchboard.llm._assembly import ToolCallAssembler, completed, usage_from
from switchboard.llm.types import Completed, TextDelta

__all__ = ["DIRECT_PROVIDERS", "KEYLESS_PROVIDERS", "DirectPool", "Route", "direct_events", "is_keyless", "open_stream",
           "plan_route"]

logger = logging.getLogger("switchboard.llm")

# litellm providers whose chat requests are plain OpenAI chat completions at an OpenAI-style base URL.
DIRECT_PROVIDERS = frozenset({"openai", "hosted_vllm", "lm_studio", "llamafile", "openrouter"})

# Where litellm looks when the entry names no api_base / no key (its own order).
_BASE_ENV = {"openai": ("OPENAI_BASE_URL", "OPENAI_API_BASE"), "openrouter": ("OPENROUTER_API_BASE",)}
_BASE_DEFAULT = {"openai": "https://api.openai.com/v1", "openrouter": "https://openrouter.ai/api/v1"}
_KEY_ENV = {"openai": ("OPENAI_API_KEY",), "openrouter": ("OPENROUTER_API_KEY", "OR_API_KEY")}
_OPENROUTER_HEADERS = {"OR_SITE_URL": "HTTP-Referer", "OR_APP_NAME": "X-Title"}
_DRAIN_S = 1.0  # after [DONE]: how long the end of the body may take (then the connection is dropped)
_UNSET_TIMEOUT_S = 600.0  # what litellm waits for each read (and the connection) when no timeout is given


@dataclass(frozen=True, slots=True)
class Route:
    """How one model entry is called directly; worked out once per entry."""

    provider: str  # litellm's name for it, e.g. "openai", "hosted_vllm"
    base_url: str
    provider_key: str | None  # the key litellm would use when the entry names none (None: keyless)
    body: dict[str, Any]  # model and request options, as litellm would send them
    max_tokens_key: str  # "max_tokens", or "max_completion_tokens" (OpenAI's newer models)
    headers: dict[str, str] = field(default_factory=dict)
    keyless: bool = False  # an api_base of the site's and no api_key_env: no Authorization header


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
        name, provider, dynamic_key, resolved_base = litellm.get_llm_provider(model=model.model, api_base=model.api_base)
    except Exception:  # the call reports it (client._check_provider)
        return None
    if provider not in DIRECT_PROVIDERS:
        return None
    if provider == "openai" and isinstance(
        ProviderConfigManager.get_provider_chat_config(model=name, provider=litellm.LlmProviders(provider)),
        OpenAIOSeriesConfig,
    ):
        return None  # litellm rewrites the messages of OpenAI's o-series models
    base_url = model.api_base or resolved_base or _first(environ, _BASE_ENV.get(provider, ())) or _BASE_DEFAULT.get(provider)
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
    return Route(provider, base_url.rstrip("/"), provider_key, body, max_tokens_key, headers, keyless)


# OpenAI-compatible providers whose key variable (OPENAI_API_KEY, ...) belongs to the provider's
# own endpoint: an entry of theirs with an api_base of the site's and no api_key_env is a keyless
# local server (Ollama's /v1, vLLM, LM Studio, llama.cpp), never sent that key.
KEYLESS_PROVIDERS = frozenset({"openai", "hosted_vllm", "lm_studio", "llamafile"})


def is_keyless(model: ModelConfig, provider: str) -> bool:
    return bool(model.api_base) and not model.api_key_env and provider in KEYLESS_PROVIDERS


class DirectPool:
    """One `AsyncOpenAI` client, so one httpx connection pool, per (base URL, key)."""

    def __init__(self) -> None:
        self._clients: dict[tuple[str, str | None], openai.AsyncOpenAI] = {}

    def client(self, base_url: str, api_key: str | None, *, keyless: bool = False) -> openai.AsyncOpenAI:
        found = self._clients.get((base_url, api_key))
        if found is None:
            # Without a key the SDK reads OPENAI_API_KEY, or refuses (openai.OpenAIError): as litellm
            # does. A keyless local server is neither: the key provider gives "" and `open_stream`
            # omits the header.
            key = _no_key if keyless and api_key is None else api_key
            found = openai.AsyncOpenAI(base_url=base_url, api_key=key, max_retries=0)
            self._clients[(base_url, api_key)] = found
        return found

    def __len__(self) -> int:
        return len(self._clients)

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.close()


async def open_stream(
    pool: DirectPool,
    route: Route,
    api_key: str | None,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    *,
    timeout_s: float | None,
    max_tokens: int | None,
) -> openai.AsyncStream[object]:
    """Sends the request; returns once the provider answered with a stream, or raises
    what litellm raises for the failure. `timeout_s` limits each wait (httpx timeout)."""
    body: dict[str, Any] = {**route.body, "messages": messages, "stream": True}
    if tools:
        body["tools"] = tools
    if max_tokens:
        body[route.max_tokens_key] = max_tokens
    options: openai.RequestOptions = {}
    key = api_key or route.provider_key
    keyless = route.keyless and key is None
    if route.headers or keyless:
        options["headers"] = {**route.headers, "Authorization": openai.Omit()} if keyless else route.headers
    options["timeout"] = _UNSET_TIMEOUT_S if timeout_s is None else timeout_s
    try:
        return await pool.client(route.base_url, key, keyless=keyless).post(
            "/chat/completions",
            cast_to=object,  # chunks stay plain dicts
            body=body,
            options=options,
            stream=True,
            stream_cls=_ChunkStream,
        )
    except Exception as exc:
        raise _open_error(exc, route) from exc


class _ChunkStream(openai.AsyncStream[object]):  # private override, pinned by tests/unit/test_library_edges.py
    """The server-sent events of a chat-completions stream as plain dicts. Unlike the
    SDK's own stream it reads the body to its end after [DONE], so that the connection
    goes back to the pool instead of being closed (a new TLS handshake per call)."""

    async def __stream__(self) -> AsyncIterator[object]:
        response = self.response
        lines = response.aiter_lines()
        data: list[str] = []
        try:
            async for line in lines:
                if line.startswith("data:"):
                    data.append(line[6:] if line.startswith("data: ") else line[5:])
                    continue
                if line or not data:
                    continue  # other fields (event:, id:, comments) or an empty event
                text, data = "\n".join(data), []
                if text.startswith("[DONE]"):
                    break
                chunk = json.loads(text)
                if isinstance(chunk, dict) and chunk.get("error"):  # an error sent inside the stream
                    error = chunk["error"]
                    message = error.get("message") if isinstance(error, dict) else None
                    raise openai.APIError(message if isinstance(message, str) and message else
                                          "An error occurred during streaming", request=response.request, body=error)  # fmt: skip
                yield chunk
            else:
                return
            try:
                async with asyncio.timeout(_DRAIN_S):
                    async for _ in lines:
                        pass
            except (TimeoutError, httpx.HTTPError):
                pass
        finally:
            await response.aclose()


async def direct_events(stream: AsyncIterator[object], route: Route) -> AsyncGenerator[TextDelta | Completed, None]:
    """The provider's chunks as events: text as it comes, then one Completed."""
    assembler = ToolCallAssembler()
    finish_reason: str | None = None
    usage = None
    received = False
    try:
        async for chunk in stream:
            received = True
            if not isinstance(chunk, dict):
                continue
            raw = chunk.get("usage")
            if isinstance(raw, dict):
                usage = usage_from(raw.get("prompt_tokens"), raw.get("completion_tokens"), raw.get("total_tokens")) or usage
            for choice in chunk.get("choices") or ():
                finish_reason = choice.get("finish_reason") or finish_reason
                delta = choice.get("delta") or {}
                for fragment in delta.get("tool_calls") or ():
                    function = fragment.get("function") or {}
                    assembler.add(fragment.get("index"), fragment.get("id") or "", function.get("name") or "",
                                  function.get("arguments") or "")  # fmt: skip
                content = delta.get("content")
                if content:
                    yield TextDelta(content)
    except (openai.OpenAIError, httpx.HTTPError, TimeoutError) as exc:
        raise _stream_error(exc, route, received) from exc
    yield completed(assembler, map_finish_reason(finish_reason) if finish_reason else None, usage)


# -- failures, as litellm's OpenAI code raises them ---------------------------------------


def _litellm_mapped(exc: Exception, route: Route) -> Exception:
    try:
        exception_type(model=route.body["model"], original_exception=exc, custom_llm_provider=route.provider)
    except Exception as mapped:  # exception_type always raises
        return mapped
    return exc


def _open_error(exc: Exception, route: Route) -> Exception:
    """A failed request: litellm wraps it in its OpenAIError (status, headers, body) and maps that."""
    if isinstance(exc, openai.UnprocessableEntityError):
        return _litellm_mapped(exc, route)
    headers = getattr(exc, "headers", None) or getattr(getattr(exc, "response", None), "headers", None)
    status, message = getattr(exc, "status_code", 500), str(exc)
    if type(exc).__name__ == "ReadTimeout":
        status, message = 408, "ReadTimeout"
    wrapped = LitellmOpenAIError(status_code=status, message=message, headers=headers, body=getattr(exc, "body", None))
    wrapped.__cause__ = exc
    return _litellm_mapped(wrapped, route)


def _stream_error(exc: Exception, route: Route, received: bool) -> Exception:
    """A stream that broke: a client error as litellm maps it, anything else wrapped
    in MidStreamFallbackError (whether a chunk had arrived decides a retry's fate)."""
    mapped = exc if isinstance(exc, openai.OpenAIError) else _litellm_mapped(exc, route)
    for status in (getattr(mapped, "status_code", None), getattr(exc, "status_code", None)):
        if isinstance(status, int) and 400 <= status < 500 and status != 429:
            return mapped
    return lx.MidStreamFallbackError(message=str(mapped), model=route.body["model"], llm_provider=route.provider,
                                     original_exception=mapped, is_pre_first_chunk=not received)  # fmt: skip


async def _no_key() -> str:
    return ""


def _first(environ: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    return next((environ[name] for name in names if environ.get(name)), None)
