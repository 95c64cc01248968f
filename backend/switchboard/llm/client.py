"""Streaming model calls, as provider-neutral events.

`LLMClient.stream` yields `TextDelta`s while the answer arrives and exactly one
`Completed` at the end (finish reason, assembled tool calls, usage); a `Notice`
before each retry says what failed and how long the wait is. A model entry that
litellm resolves to an OpenAI-compatible endpoint is streamed directly with the
plain HTTP (`openai_direct`), every other one through litellm; both paths'
failures are translated once, here, into the `LLMError` tree. A call that
fails before any of its text reached the caller is retried (`RetryPolicy`);
one that breaks after that ends with `LLMStreamCut`, the text so far kept.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import os
import time
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import aclosing
from typing import Any

import litellm

from switchboard.config.models import ModelConfig
from switchboard.errors import Cancelled, LLMError, LLMStreamCut, LLMTimeout, LLMUnavailable, SwitchboardError
from switchboard.history import HistoryRecord
from switchboard.llm._assembly import ToolCallAssembler, completed, usage_from
from switchboard.llm._errors import PROVIDER_ERRORS, stream_cut, translate
from switchboard.llm.demo import DEMO_PROVIDER, DemoLLM
from switchboard.llm.messages import PreparedMessages
from switchboard.llm.openai_direct import (
    DirectFailures,
    DirectPool,
    Route,
    direct_events,
    is_keyless,
    open_stream,
    plan_route,
)
from switchboard.llm.retry import RetryPolicy, log_retry, retry_notice, with_attempts
from switchboard.llm.types import Completed, Notice, TextDelta, Usage

__all__ = ["CallReporter", "LLMClient"]

logger = logging.getLogger(__name__)

KEYLESS = "keyless"  # what litellm sends as the key of a model with an api_base and no api_key_env

CallReporter = Callable[[str, float, Usage | None, SwitchboardError | None], None]
"""on_call(model_name, duration_s, usage, error): called once after every model call."""


class LLMClient:
    def __init__(
        self,
        *,
        on_call: CallReporter | None = None,
        environ: Mapping[str, str] | None = None,
        demo_chunk_delay_s: float = 0.02,
        max_attempts: int = 3,
        base_delay_s: float = 1.0,
        max_delay_s: float = 30.0,
        direct: bool = True,
    ) -> None:
        """`max_attempts` (the first included), `base_delay_s` and `max_delay_s` set the
        retries of failed calls; see `RetryPolicy`. `direct=False` sends every model
        through litellm (an entry's own `direct: false` does that for one model)."""
        self._retry = RetryPolicy(max_attempts=max_attempts, base_delay_s=base_delay_s, max_delay_s=max_delay_s)
        self._on_call = on_call
        self._environ = os.environ if environ is None else environ
        self._direct = direct
        self._facts: dict[tuple[str, str | None], bool] = {}
        self._routes: dict[int, tuple[ModelConfig, Route | None]] = {}
        self._pool = DirectPool()
        self._prepared = PreparedMessages()  # a conversation's calls convert only its new records
        _quiet_litellm()
        _register_demo(DemoLLM(chunk_delay_s=demo_chunk_delay_s))

    async def stream(
        self,
        model: ModelConfig,
        messages: Sequence[HistoryRecord | dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        *,
        system: str = "",
        timeout_s: float | None = None,
        max_tokens: int | None = None,
    ) -> AsyncGenerator[TextDelta | Completed | Notice, None]:
        """One model call over history records (or ready OpenAI messages). `timeout_s`
        limits each wait for the provider (connect, and every read while streaming),
        not the whole answer."""
        messages = self._prepared.convert(system, messages)
        started = time.monotonic()
        usage: Usage | None = None
        error: SwitchboardError | None = None
        completed = False
        try:
            secret = self._api_key(model)
            route = self._route(model)
            attempt = 1
            while True:
                shown = False  # has text of this attempt reached the caller?
                try:
                    if route is None:
                        response = await self._open(model, messages, tools, secret, timeout_s, max_tokens)
                        stream, close = _events(response), response.aclose
                    else:
                        failures = DirectFailures(
                            model.name, model.model, model.api_base or route.base_url, secret, model.api_key_env
                        )
                        response = await open_stream(
                            self._pool,
                            route,
                            secret,
                            messages,
                            tools,
                            failures=failures,
                            timeout_s=timeout_s,
                            max_tokens=max_tokens or model.max_tokens,
                        )
                        stream, close = direct_events(response.batches()), response.aclose
                    try:
                        async with aclosing(stream) as events:
                            async for event in events:
                                if isinstance(event, Completed):
                                    usage, completed = event.usage, True
                                shown = True
                                yield event
                    finally:
                        await close()  # also when the caller stops: the HTTP stream is closed
                    break
                except (LLMError, *PROVIDER_ERRORS) as exc:  # the direct path's are LLMErrors already
                    failure = exc if isinstance(exc, LLMError) else translate(exc, model, secret)
                    if shown:  # sending it again would repeat what the user has already read
                        cut = isinstance(failure, (LLMStreamCut, LLMTimeout))
                        raise (failure if cut else stream_cut(model, failure.message)) from None
                    delay = self._retry.delay_before(attempt + 1, exc)
                    if delay is None:
                        raise with_attempts(failure, attempt) from None
                    attempt += 1
                    log_retry(model.name, attempt, delay, failure)
                    yield Notice(
                        "llm_retry", retry_notice(model.name, failure, attempt, self._retry.max_attempts, delay)
                    )
                    await asyncio.sleep(delay)
        except SwitchboardError as exc:
            error = exc
            raise
        except Exception as exc:
            error = LLMError(f"Model '{model.name}' failed unexpectedly ({type(exc).__name__})")
            raise
        except BaseException:  # the consumer closed the stream, or the task was cancelled
            if not completed:
                error = Cancelled("The model call was stopped.")
            raise
        finally:
            self._report(model.name, time.monotonic() - started, usage, error)

    async def complete(
        self,
        model: ModelConfig,
        messages: list[dict[str, Any]],
        *,
        timeout_s: float | None = None,
        max_tokens: int | None = None,
    ) -> str:
        """The whole text answer of one call without tools (e.g. for MCP sampling)."""
        parts: list[str] = []
        async for event in self.stream(model, messages, None, timeout_s=timeout_s, max_tokens=max_tokens):
            if isinstance(event, TextDelta):
                parts.append(event.text)
        return "".join(parts)

    # -- helpers -----------------------------------------------------------------
    async def _open(
        self,
        model: ModelConfig,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        api_key: str | None,
        timeout_s: float | None,
        max_tokens: int | None,
    ) -> Any:
        # The single place a request leaves. `stream` retries it under its RetryPolicy;
        # litellm's and the OpenAI SDK's own retries stay off.
        reports_usage = self._provider_facts(model)
        # litellm may change a provider's messages in place; they are shared between calls (PreparedMessages)
        kwargs: dict[str, Any] = {
            **model.extra,
            "model": model.model,
            "messages": copy.deepcopy(list(messages)),
            "stream": True,
        }
        kwargs.update(num_retries=0, max_retries=0)
        if reports_usage:
            kwargs["stream_options"] = {"include_usage": True}
        if tools:
            kwargs["tools"] = tools
        if api_key is not None:
            kwargs["api_key"] = api_key
        elif model.api_base and not model.api_key_env and is_keyless(model, _provider(model)):
            # A keyless local server: litellm's OpenAI code refuses to send without a key and would
            # otherwise send the provider's own (OPENAI_API_KEY) to this endpoint. Servers that check
            # no key ignore this one; the direct path sends no Authorization header at all.
            kwargs["api_key"] = KEYLESS
        if model.api_base:
            kwargs["api_base"] = model.api_base
        if max_tokens or model.max_tokens:
            kwargs["max_tokens"] = max_tokens or model.max_tokens
        if model.temperature is not None:
            kwargs["temperature"] = model.temperature
        if timeout_s is not None:
            kwargs["timeout"] = timeout_s
        return await litellm.acompletion(**kwargs)

    async def aclose(self) -> None:
        """Closes the direct path's connection pools (at shutdown)."""
        await self._pool.aclose()

    def _route(self, model: ModelConfig) -> Route | None:
        """The entry's direct route, or None for litellm; worked out once per entry
        (the entry object itself: a reloaded config brings new ones)."""
        if not self._direct or model.is_demo:
            return None
        known = self._routes.get(id(model))
        if known is not None and known[0] is model:
            return known[1]
        reports_usage = self._provider_facts(model)
        route = plan_route(model, reports_usage=reports_usage)
        if len(self._routes) >= 256:  # callers that build entries on the fly must not grow it forever
            self._routes.clear()
        self._routes[id(model)] = (model, route)
        return route

    def _provider_facts(self, model: ModelConfig) -> bool:
        """Checks that litellm knows the model's provider; whether it reports usage when streaming.
        Both are litellm look-ups that do not change for a model entry, so they run once per entry."""
        key = (model.model, model.api_base)
        facts = self._facts.get(key)
        if facts is None:
            _check_provider(model)
            facts = self._facts[key] = _reports_stream_usage(model)
        return facts

    def _api_key(self, model: ModelConfig) -> str | None:
        if not model.api_key_env:
            return None
        key = self._environ.get(model.api_key_env)
        if not key:
            raise LLMUnavailable(
                f"Model '{model.name}' is not available: {model.api_key_env} is not set.",
                action="Pick another model, or ask your administrator to set its API key.",
            )
        return key

    def _report(self, name: str, duration_s: float, usage: Usage | None, error: SwitchboardError | None) -> None:
        if self._on_call is None:
            return
        try:
            self._on_call(name, duration_s, usage, error)
        except Exception:  # reporting must never break a call
            logger.exception("on_call reporter failed")


async def _events(response: Any) -> AsyncGenerator[TextDelta | Completed, None]:
    """litellm's stream chunks as events: text as it comes, then one Completed."""
    assembler = ToolCallAssembler()
    finish_reason: str | None = None
    usage: Usage | None = None
    async for chunk in response:
        usage = _usage_of(chunk) or usage
        for choice in chunk.choices or ():
            finish_reason = choice.finish_reason or finish_reason
            delta = choice.delta
            for fragment in getattr(delta, "tool_calls", None) or ():
                function = getattr(fragment, "function", None)
                assembler.add(
                    getattr(fragment, "index", None),
                    getattr(fragment, "id", None) or "",
                    getattr(function, "name", None) or "",
                    getattr(function, "arguments", None) or "",
                )
            if delta is not None and delta.content:
                yield TextDelta(delta.content)
    yield completed(assembler, finish_reason, usage)


def _usage_of(chunk: Any) -> Usage | None:
    raw = getattr(chunk, "usage", None)
    if raw is None:  # providers without stream_options report usage here (litellm's documented hidden params)
        raw = (getattr(chunk, "_hidden_params", None) or {}).get("usage")
    if raw is None:
        return None
    return usage_from(
        getattr(raw, "prompt_tokens", 0), getattr(raw, "completion_tokens", 0), getattr(raw, "total_tokens", 0)
    )


def _provider(model: ModelConfig) -> str:
    try:
        return str(litellm.get_llm_provider(model=model.model, api_base=model.api_base)[1])
    except litellm.BadRequestError:
        return ""


def _check_provider(model: ModelConfig) -> None:
    try:
        litellm.get_llm_provider(model=model.model, api_base=model.api_base)
    except litellm.BadRequestError:
        raise LLMUnavailable(
            f"Model '{model.name}': litellm cannot tell the provider of '{model.model}'.",
            action="Ask your administrator to write the model as 'provider/model' in llmconfig.yml "
            "(e.g. 'openai/gpt-4o-mini'); meanwhile pick another model.",
        ) from None


def _reports_stream_usage(model: ModelConfig) -> bool:
    if model.is_demo:
        return True
    try:
        params = litellm.get_supported_openai_params(model=model.model)
    except Exception:  # unknown provider: the call itself reports it properly
        return False
    return params is not None and "stream_options" in params


def _quiet_litellm() -> None:
    litellm.suppress_debug_info = True  # no "Give Feedback" / "Provider List" banners
    litellm.set_verbose = False
    litellm.turn_off_message_logging = True  # conversations stay out of litellm's logging callbacks


def _register_demo(handler: DemoLLM) -> None:
    """Idempotent: exactly one entry for the demo provider (the map is process-wide)."""
    others = [item for item in litellm.custom_provider_map if item["provider"] != DEMO_PROVIDER]
    litellm.custom_provider_map = [*others, {"provider": DEMO_PROVIDER, "custom_handler": handler}]
