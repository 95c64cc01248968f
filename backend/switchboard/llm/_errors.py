"""litellm's typed exceptions, translated once into Switchboard's tree.

Only the exception's type (and, for retries, its HTTP status and headers)
decides; the provider's own message is kept as detail, with the API key
scrubbed out and cut short.
"""

from __future__ import annotations

import email.utils
import math
import socket
from collections.abc import Mapping
from datetime import UTC, datetime

import aiohttp
import httpx
import openai
from litellm import exceptions as lx

from switchboard.config.models import ModelConfig
from switchboard.errors import (
    LLMContextOverflow,
    LLMError,
    LLMRateLimited,
    LLMStreamCut,
    LLMTimeout,
    LLMUnavailable,
)

# Every litellm exception derives from the openai ones; transport errors that
# slip past litellm's own mapping are caught by type too.
PROVIDER_ERRORS = (openai.OpenAIError, httpx.HTTPError, TimeoutError)

_DETAIL_CHARS = 300
_TIMEOUTS = (lx.Timeout, openai.APITimeoutError, httpx.TimeoutException, TimeoutError)


def is_retryable(exc: BaseException) -> bool:
    """Whether the same request may succeed when sent again: HTTP 408, 429 and 5xx,
    or a failed connection. Not our own timeout (the user already waited the whole
    limit), not any other 4xx, not an SDK that refuses its settings. An `LLMError` (the direct
    path's) says so itself."""
    if isinstance(exc, LLMError):
        return exc.retryable
    causes = causes_of(exc)
    if _any(causes, _TIMEOUTS) or any(type(cause) is openai.OpenAIError for cause in causes):
        return False
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in (408, 429) or exc.status_code >= 500
    return _any(causes, (openai.APIConnectionError, httpx.TransportError))


def retry_after_s(exc: BaseException) -> float | None:
    """The provider's Retry-After (seconds or an HTTP date; or OpenAI's retry-after-ms),
    as seconds from now. litellm keeps the provider's headers in
    `litellm_response_headers`; the response object may carry them too. An `LLMError` (the
    direct path's) carries it."""
    if isinstance(exc, LLMError):
        return exc.retry_after_s
    for cause in causes_of(exc):
        for headers in (
            getattr(cause, "litellm_response_headers", None),
            getattr(getattr(cause, "response", None), "headers", None),
        ):
            if isinstance(headers, Mapping) and headers:
                lowered = {str(key).lower(): str(value) for key, value in headers.items()}
                if "retry-after-ms" in lowered or "retry-after" in lowered:
                    return parse_retry_after(lowered)
    return None


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Retry-After (seconds or an HTTP date) or OpenAI's retry-after-ms, as seconds from now."""
    lowered = {str(key).lower(): str(value) for key, value in headers.items()}
    if "retry-after-ms" in lowered:
        millis = _seconds(lowered["retry-after-ms"])
        if millis is not None:
            return millis / 1000
    if "retry-after" in lowered:
        return _seconds(lowered["retry-after"])
    return None


def translate(exc: BaseException, model: ModelConfig, secret: str | None) -> LLMError:
    # litellm wraps stream failures in MidStreamFallbackError and sometimes files a
    # refused connection under InternalServerError; the typed causes underneath
    # (httpx, openai) tell what really happened.
    primary = getattr(exc, "original_exception", None) if isinstance(exc, lx.MidStreamFallbackError) else None
    primary = primary if isinstance(primary, BaseException) else exc
    causes = causes_of(exc)
    name = model.name
    detail = _detail(primary, secret)
    key_hint = f" ({model.api_key_env})" if model.api_key_env else ""
    if _any(causes, lx.RateLimitError):
        after = retry_after_s(exc)
        wait = f"wait {math.ceil(after)} seconds" if after else "wait a minute"
        return LLMRateLimited(
            f"Model '{name}' is rate-limited by its provider{detail}",
            action=f"The provider is limiting requests; {wait} and try again, or pick another model.",
        )
    if _any(causes, (lx.Timeout, openai.APITimeoutError, httpx.TimeoutException, TimeoutError)):
        return LLMTimeout(f"Model '{name}' did not answer in time{detail}")
    if isinstance(primary, lx.ContextWindowExceededError):
        return LLMContextOverflow(f"The conversation is too long for model '{name}'{detail}")
    if isinstance(primary, lx.ContentPolicyViolationError):
        return LLMError(
            f"The provider of model '{name}' refused the request under its content policy{detail}",
            action="Rephrase the request, or pick another model.",
        )
    if isinstance(primary, (lx.AuthenticationError, lx.PermissionDeniedError)):
        return LLMUnavailable(
            f"The provider rejected the credentials of model '{name}'{detail}",
            action=f"Ask your administrator to check the model's API key{key_hint}; meanwhile pick another model.",
        )
    if isinstance(primary, lx.NotFoundError):
        return LLMUnavailable(
            f"The provider does not know model '{model.model}' (configured as '{name}'){detail}",
            action="Ask your administrator to check the model string in llmconfig.yml; meanwhile pick another model.",
        )
    if isinstance(exc, lx.MidStreamFallbackError) and not exc.is_pre_first_chunk:
        return stream_cut(model)
    if any(type(cause) is openai.OpenAIError for cause in causes):  # the SDK refused its own settings
        return LLMUnavailable(
            f"Model '{name}' is not set up correctly{detail}",
            action="Ask your administrator to check the model's api_key_env and api_base in llmconfig.yml; "
            "meanwhile pick another model.",
        )
    if _any(causes, (openai.APIConnectionError, httpx.TransportError, aiohttp.ClientConnectionError, ConnectionError)):
        return LLMUnavailable(
            f"Model '{name}': {unreachable(exc, model.api_base)}",
            action="Start the model's server (or check its api_base in llmconfig.yml), or pick another model.",
        )
    if isinstance(primary, (lx.ServiceUnavailableError, lx.BadGatewayError, lx.InternalServerError)):
        return LLMError(
            f"The provider of model '{name}' had a server error{detail}",
            action="Try again in a moment, or pick another model.",
        )
    if isinstance(primary, (lx.BadRequestError, lx.UnprocessableEntityError)):
        return LLMError(
            f"The provider of model '{name}' rejected the request{detail}",
            action="Try again or pick another model; if it persists, tell your administrator.",
        )
    return LLMError(f"Model '{name}' failed{detail}")


def unreachable(exc: BaseException, url: str | None) -> str:
    """Why nothing could be asked at `url`, from the connection error's types (not its text):
    "nothing answers at URL (connection refused)" when the port is closed."""
    causes = causes_of(exc)
    where = url or _address(causes) or "the provider's address"
    if _any(causes, ConnectionRefusedError):
        return f"nothing answers at {where} (connection refused)"
    if _any(causes, socket.gaierror):
        return f"cannot reach {where} (the host name is not known)"
    if _any(causes, _TIMEOUTS):
        return f"cannot reach {where} (no answer in time)"
    deepest = next(
        (c for c in reversed(causes) if isinstance(c, (httpx.TransportError, aiohttp.ClientError, ConnectionError))),
        None,
    )
    return f"cannot reach {where} ({type(deepest or exc).__name__})"


def _address(causes: list[BaseException]) -> str | None:
    for cause in causes:
        if isinstance(cause, aiohttp.ClientConnectorError):
            return f"{cause.host}:{cause.port}"
        request = getattr(cause, "_request", None)
        if isinstance(request, httpx.Request):
            return str(request.url)
    return None


def stream_cut(model: ModelConfig, reason: str = "the connection to the provider dropped.") -> LLMStreamCut:
    return LLMStreamCut(f"The answer of model '{model.name}' was cut off mid-stream: {reason}")


def causes_of(exc: BaseException) -> list[BaseException]:
    """The exception, what it wraps (`original_exception`) and its cause/context chain."""
    found: list[BaseException] = []
    pending: list[BaseException] = [exc]
    while pending and len(found) < 20:
        current = pending.pop(0)
        if any(current is seen for seen in found):
            continue
        found.append(current)
        wrapped = (getattr(current, "original_exception", None), current.__cause__, current.__context__)
        pending += [cause for cause in wrapped if isinstance(cause, BaseException)]
    return found


def _any(causes: list[BaseException], types: type | tuple[type, ...]) -> bool:
    return any(isinstance(cause, types) for cause in causes)


def _detail(exc: BaseException, secret: str | None) -> str:
    status = getattr(exc, "status_code", None)
    text = " ".join(str(getattr(exc, "message", "") or exc).split())
    if secret:
        text = text.replace(secret, "***")
    if len(text) > _DETAIL_CHARS:
        text = text[:_DETAIL_CHARS] + "…"
    prefix = f"HTTP {status}: " if isinstance(status, int) else ""
    return f" ({prefix}{text})" if text else (f" (HTTP {status})" if prefix else "")


def _seconds(value: str) -> float | None:
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    return max(0.0, seconds) if math.isfinite(seconds) else None
