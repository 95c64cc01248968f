"""When a failed model call is sent again, and how long to wait first.

Only failures that may pass (HTTP 408, 429, 5xx, a failed connection; see
`is_retryable`) are retried, and only while nothing of the answer has reached
the caller: the client decides that part. Waits grow exponentially with full
jitter. A provider's Retry-After is honoured; one longer than `max_delay_s` is
not waited for: the call fails at once and the error says how long to wait.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass

from switchboard.errors import LLMError, LLMUnavailable
from switchboard.llm._errors import is_retryable, retry_after_s

__all__ = ["RetryPolicy", "log_retry", "retry_notice", "with_attempts"]

logger = logging.getLogger("switchboard.llm")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_attempts: int = 3  # in all, the first one included
    base_delay_s: float = 1.0
    max_delay_s: float = 30.0  # no single wait is longer

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if self.base_delay_s < 0 or self.max_delay_s < 0:
            raise ValueError("retry delays cannot be negative")

    def delay_before(self, attempt: int, exc: BaseException) -> float | None:
        """Seconds to wait before attempt number `attempt` (2, 3, ...) after `exc`
        failed the previous one; None: do not try again."""
        if attempt > self.max_attempts or not is_retryable(exc):
            return None
        backoff = random.uniform(0, min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 2)))
        after = retry_after_s(exc)
        if after is None:
            return backoff
        if after > self.max_delay_s:
            return None
        return max(after, backoff)


def log_retry(model_name: str, attempt: int, delay_s: float, error: LLMError) -> None:
    """`attempt` is the number of the attempt about to be made."""
    logger.warning(
        "model %s failed (%s); attempt %d in %.2f s",
        model_name,
        error.code,
        attempt,
        delay_s,
        extra={
            "event": "llm_retry",
            "model": model_name,
            "attempt": attempt,
            "delay_s": round(delay_s, 3),
            "error": f"{error.code}: {error.message}",
        },
    )


_WHY = {
    "rate_limited": "is rate-limiting requests",
    "timeout": "did not answer in time",
}


def retry_notice(model_name: str, error: LLMError, attempt: int, max_attempts: int, delay_s: float) -> str:
    """What the user reads while a failed call waits to be sent again."""
    again = f"trying again in {max(delay_s, 0.1):.1f} s (attempt {attempt} of {max_attempts})."
    if isinstance(error, LLMUnavailable):  # it says itself what is wrong (nothing answers at ...)
        return f"{error.message}; {again}"
    why = _WHY.get(error.code, "answered with an error")
    return f"The provider of model '{model_name}' {why}; {again}"


def with_attempts(error: LLMError, attempts: int) -> LLMError:
    """The final error, saying how often the call was tried."""
    if attempts > 1:
        error.message = f"{error.message} (tried {attempts} times)"
        error.args = (error.message,)
    return error
