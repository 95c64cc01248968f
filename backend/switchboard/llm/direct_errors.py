"""The direct path's failures, straight into the error tree (`switchboard.errors`).

What aiohttp and the endpoint give (an HTTP status with its body and headers, a timeout, a
connection that failed or dropped, JSON that does not parse, an error sent inside the stream)
becomes the `LLMError` the user sees here, in one place, with what a retry needs beside it
(`retryable`, `retry_after_s`). The kinds are those litellm's path gets for the same answers
(`llm/_errors.py`); the detail is the provider's own message (its `error.message`, else its
body's text), the key scrubbed out and cut short.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from litellm.litellm_core_utils.exception_mapping_utils import ExceptionCheckers

from switchboard.errors import LLMContextOverflow, LLMError, LLMRateLimited, LLMStreamCut, LLMTimeout, LLMUnavailable
from switchboard.llm._errors import parse_retry_after, unreachable

__all__ = ["DirectFailures"]

_DETAIL_CHARS = 300
_SET_UP = (
    "Ask your administrator to check the model's api_key_env and api_base in llmconfig.yml; "
    "meanwhile pick another model."
)


@dataclass(frozen=True, slots=True)
class DirectFailures:
    """Makes one call's failures into errors: `name` the entry's, `model` its model string, `where`
    its base URL, `secret` the key sent (never shown), `key_env` where the key comes from."""

    name: str
    model: str
    where: str
    secret: str | None = None
    key_env: str | None = None

    def answered(self, status: int, headers: Mapping[str, str], body: bytes, why: str | None = None) -> LLMError:
        """An answer with an error status (or a redirect not followed: `why` says so)."""
        error, text = _error_of(body)
        detail = self._detail(f"HTTP {status}", why or text)
        name = self.name
        if status == 429:
            after = parse_retry_after(headers)
            wait = f"wait {math.ceil(after)} seconds" if after else "wait a minute"
            return _retry(
                LLMRateLimited(
                    f"Model '{name}' is rate-limited by its provider{detail}",
                    action=f"The provider is limiting requests; {wait} and try again, or pick another model.",
                ),
                after,
            )
        if status in (401, 403):
            hint = f" ({self.key_env})" if self.key_env else ""
            return LLMUnavailable(
                f"The provider rejected the credentials of model '{name}'{detail}",
                action=f"Ask your administrator to check the model's API key{hint}; meanwhile pick another model.",
            )
        if status == 404:
            return LLMUnavailable(
                f"The provider does not know model '{self.model}' (configured as '{name}'){detail}",
                action="Ask your administrator to check the model string in llmconfig.yml; meanwhile pick another model.",
            )
        if status in (400, 413, 422):
            code = error.get("code") if isinstance(error, dict) else None
            if code == "context_length_exceeded" or ExceptionCheckers.is_error_str_context_window_exceeded(text):
                return LLMContextOverflow(f"The conversation is too long for model '{name}'{detail}")
            if code == "content_policy_violation":
                return LLMError(
                    f"The provider of model '{name}' refused the request under its content policy{detail}",
                    action="Rephrase the request, or pick another model.",
                )
            return LLMError(
                f"The provider of model '{name}' rejected the request{detail}",
                action="Try again or pick another model; if it persists, tell your administrator.",
            )
        if status == 408 or status >= 500:
            return _retry(
                LLMError(
                    f"The provider of model '{name}' had a server error{detail}",
                    action="Try again in a moment, or pick another model.",
                ),
                parse_retry_after(headers),
            )
        return LLMError(f"Model '{name}' failed{detail}")

    def unreached(self, exc: BaseException) -> LLMError:
        """No answer at all: the connection failed, or its head did not come within the wait."""
        if isinstance(exc, TimeoutError):
            return LLMTimeout(f"Model '{self.name}' did not answer in time (no answer within the wait)")
        return _retry(
            LLMUnavailable(
                f"Model '{self.name}': {unreachable(exc, self.where)}",
                action="Start the model's server (or check its api_base in llmconfig.yml), or pick another model.",
            )
        )

    def broke(self, exc: BaseException, received: bool) -> LLMError:
        """The stream stopped while it was read: no data within the wait, or the connection dropped."""
        if isinstance(exc, TimeoutError):
            return LLMTimeout(f"Model '{self.name}' did not answer in time (no data within the wait)")
        if received:
            cut = f"The answer of model '{self.name}' was cut off mid-stream: the connection to the provider dropped."
            return _retry(LLMStreamCut(cut))
        return _retry(
            LLMError(
                f"The connection to the provider of model '{self.name}' dropped before its answer began "
                f"({type(exc).__name__})",
                action="Try again in a moment, or pick another model.",
            )
        )

    def garbled(self, data: bytes) -> LLMError:
        """The endpoint sent JSON that does not parse, or is not what the API sends."""
        return LLMError(
            f"Model '{self.name}' answered with what is not a chat completion"
            f"{self._detail('', data.decode('utf-8', 'replace'))}",
            action="Try again, or pick another model; if it persists, ask your administrator to check the "
            "model's api_base in llmconfig.yml.",
        )

    def said(self, error: object) -> LLMError:
        """An error the provider sent inside the stream."""
        message = error.get("message") if isinstance(error, dict) else error
        text = message if isinstance(message, str) and message else "an error occurred during streaming"
        return LLMError(f"The provider of model '{self.name}' sent an error{self._detail('', text)}")

    def not_a_stream(self, status: int, kind: str) -> LLMError:
        """A body with no server-sent events at all (e.g. a proxy's sign-in page)."""
        return LLMError(
            f"Model '{self.name}' failed (the endpoint answered HTTP {status} with no server-sent events "
            f"(Content-Type: {kind or 'none'}); check the model's api_base)",
            action=_SET_UP,
        )

    def no_key(self, names: str) -> LLMError:
        return LLMUnavailable(
            f"Model '{self.name}' is not set up correctly (the model entry names no api_key_env and "
            f"the provider's {names} is not set)",
            action=_SET_UP,
        )

    def _detail(self, prefix: str, text: str) -> str:
        text = " ".join(text.split())
        if self.secret:
            text = text.replace(self.secret, "***")
        if len(text) > _DETAIL_CHARS:
            text = text[:_DETAIL_CHARS] + "…"
        if not text:
            return f" ({prefix})" if prefix else ""
        return f" ({prefix}: {text})" if prefix else f" ({text})"


def _retry(error: LLMError, after_s: float | None = None) -> LLMError:
    error.retryable, error.retry_after_s = True, after_s
    return error


def _error_of(body: bytes) -> tuple[Any, str]:
    """An error body's `error` object (or the whole JSON) and its message, else the body's text."""
    text = body.decode("utf-8", "replace").strip()
    try:
        parsed = json.loads(text)
    except ValueError:
        return None, text
    error = parsed.get("error", parsed) if isinstance(parsed, dict) else parsed
    message = error.get("message") if isinstance(error, dict) else error
    if isinstance(message, str) and message:
        return error, message
    return error, text
