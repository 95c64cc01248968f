"""litellm's typed exceptions, translated once into Switchboard's tree.

Only the exception's type decides the class; the provider's own message is kept
as detail, with the API key scrubbed out and cut short.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import openai
from litellm import exceptions as lx

from switchboard.config.models import ModelConfig
from switchboard.errors import LLMError, LLMRateLimited, LLMTimeout, LLMUnavailable

_DETAIL_CHARS = 300


@contextmanager
def translated_errors(model: ModelConfig, secret: str | None) -> Iterator[None]:
    try:
        yield
    # Every litellm exception derives from the openai ones; transport errors that
    # slip past litellm's own mapping are caught by type too.
    except (openai.OpenAIError, httpx.HTTPError, TimeoutError) as exc:
        raise translate(exc, model, secret) from None


def translate(exc: Exception, model: ModelConfig, secret: str | None) -> LLMError:
    # litellm wraps stream failures in MidStreamFallbackError and sometimes files a
    # refused connection under InternalServerError; the typed causes underneath
    # (httpx, openai) tell what really happened.
    primary = getattr(exc, "original_exception", None) if isinstance(exc, lx.MidStreamFallbackError) else None
    primary = primary if isinstance(primary, Exception) else exc
    causes = _causes(exc)
    name = model.name
    detail = _detail(primary, secret)
    key_hint = f" ({model.api_key_env})" if model.api_key_env else ""
    if _any(causes, lx.RateLimitError):
        after = _retry_after(next(c for c in causes if isinstance(c, lx.RateLimitError)))
        wait = f"wait {after} seconds" if after else "wait a minute"
        return LLMRateLimited(
            f"Model '{name}' is rate-limited by its provider{detail}",
            action=f"The provider is limiting requests; {wait} and try again, or pick another model.",
        )
    if _any(causes, (lx.Timeout, openai.APITimeoutError, httpx.TimeoutException, TimeoutError)):
        return LLMTimeout(f"Model '{name}' did not answer in time{detail}")
    if isinstance(primary, lx.ContextWindowExceededError):
        return LLMError(
            f"The conversation is too long for model '{name}'{detail}",
            action="Start a new conversation, or pick a model with a larger context window.",
        )
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
        return LLMError(f"The answer of model '{name}' was cut off: the connection to the provider dropped{detail}")
    if any(type(cause) is openai.OpenAIError for cause in causes):  # the SDK refused its own settings
        return LLMUnavailable(
            f"Model '{name}' is not set up correctly{detail}",
            action="Ask your administrator to check the model's api_key_env and api_base in llmconfig.yml; "
            "meanwhile pick another model.",
        )
    if _any(causes, (openai.APIConnectionError, httpx.TransportError)):
        where = f" at {model.api_base}" if model.api_base else ""
        return LLMUnavailable(
            f"Cannot reach the provider of model '{name}'{where}{detail}",
            action="Try again in a moment, or pick another model.",
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


def _causes(exc: BaseException) -> list[BaseException]:
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


def _detail(exc: Exception, secret: str | None) -> str:
    status = getattr(exc, "status_code", None)
    text = " ".join(str(getattr(exc, "message", "") or exc).split())
    if secret:
        text = text.replace(secret, "***")
    if len(text) > _DETAIL_CHARS:
        text = text[:_DETAIL_CHARS] + "…"
    prefix = f"HTTP {status}: " if isinstance(status, int) else ""
    return f" ({prefix}{text})" if text else (f" (HTTP {status})" if prefix else "")


def _retry_after(exc: Exception) -> str | None:
    headers = getattr(exc, "litellm_response_headers", None)
    if headers is None:
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
    if not headers:
        return None
    value = headers.get("retry-after")
    return value if value and value.strip().replace(".", "", 1).isdigit() else None
