"""Traces and metrics, taken at the edges: where a turn, a model call, an MCP request and a store
transaction happen (one place each), not inside every function.

**Traces** use the OpenTelemetry SDK, configured only by the standard ``OTEL_*`` variables
(``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, ``OTEL_TRACES_EXPORTER``,
``OTEL_SERVICE_NAME``, ``OTEL_TRACES_SAMPLER``, ...). With none of them set, or with
``OTEL_SDK_DISABLED=true``, tracing is off: no tracer provider is installed, and no span is
entered at all (a no-op span costs a context switch of its own per call). Span names and
attributes follow the GenAI and MCP semantic conventions: ``invoke_agent switchboard`` for a turn,
``chat {model}`` for a model call, ``{mcp.method.name} {target}`` for an MCP request. The MCP SDK
opens its own client span inside ours and puts the trace context into the request's
``params._meta`` (``traceparent``), so a server that traces joins the same trace.

**Metrics** are Prometheus counters and histograms (``prometheus-client``) in one registry per
process: a process is what a scraper sees. With several worker processes behind one port
(``serve --workers N``), ``PROMETHEUS_MULTIPROC_DIR`` makes the client write them to files there,
and ``/metrics`` sums every process's files (``serve`` sets the folder itself). With replicas,
scrape each one."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Generic, TypeVar

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest, multiprocess
from prometheus_client.metrics import MetricWrapperBase

__all__ = [
    "METRICS_CONTENT_TYPE",
    "Tracing",
    "hook_done",
    "hook_span",
    "mcp_span",
    "metrics_text",
    "model_call",
    "sessions_changed",
    "store_timer",
    "tool_call_done",
    "turn_span",
]

log = logging.getLogger("switchboard")
_tracer = trace.get_tracer("switchboard")
METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# Buckets in seconds: tool calls and model calls take from milliseconds to minutes.
_CALL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
_STORE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5)

_M = TypeVar("_M", bound=MetricWrapperBase)


class _Children(Generic[_M]):
    """A labelled metric's children, kept by their label values: `.labels()` checks and converts its
    arguments and takes a lock on every call, several times per turn."""

    def __init__(self, metric: _M) -> None:
        self.metric = metric
        self._children: dict[tuple[str, ...], _M] = {}

    def __call__(self, *values: str) -> _M:
        child = self._children.get(values)
        if child is None:
            child = self._children[values] = self.metric.labels(*values)
        return child


_registry = CollectorRegistry(auto_describe=True)
_turns = _Children(
    Counter(
        "switchboard_turns", "Turns (answers) finished, by how they finished.", ["finish_reason"], registry=_registry
    )
)
_turn_seconds = Histogram(
    "switchboard_turn_duration_seconds", "Wall time of a turn.", buckets=_CALL_BUCKETS, registry=_registry
)
_model_seconds = _Children(
    Histogram(
        "gen_ai_client_operation_duration_seconds",
        "Model calls (gen_ai.client.operation.duration).",
        ["gen_ai_operation_name", "gen_ai_request_model", "error_type"],
        buckets=_CALL_BUCKETS,
        registry=_registry,
    )
)
_model_tokens = _Children(
    Counter(
        "gen_ai_client_token_usage",
        "Tokens used by model calls (gen_ai.client.token.usage).",
        ["gen_ai_request_model", "gen_ai_token_type"],
        registry=_registry,
    )
)
_mcp_seconds = _Children(
    Histogram(
        "mcp_client_operation_duration_seconds",
        "MCP requests (mcp.client.operation.duration).",
        ["mcp_method_name", "mcp_server", "error_type"],
        buckets=_CALL_BUCKETS,
        registry=_registry,
    )
)
_tool_calls = _Children(
    Counter(
        "switchboard_tool_calls",
        "Tool calls, by server and outcome (ok, error, denied).",
        ["mcp_server", "outcome"],
        registry=_registry,
    )
)
_sessions = Gauge(
    "switchboard_open_sessions", "Open websocket connections.", registry=_registry, multiprocess_mode="livesum"
)
_store_seconds = _Children(
    Histogram(
        "switchboard_store_operation_duration_seconds",
        "Store transactions.",
        ["operation", "error_type"],
        buckets=_STORE_BUCKETS,
        registry=_registry,
    )
)
_hook_runs = _Children(
    Counter(
        "switchboard_hook_runs",
        "Policy hooks run, by point, hook and decision (allow, deny, ask, modify; error when it failed).",
        ["event", "hook", "decision"],
        registry=_registry,
    )
)
_hook_seconds = _Children(
    Histogram(
        "switchboard_hook_duration_seconds",
        "Policy hooks' time, by point.",
        ["event"],
        buckets=_STORE_BUCKETS,
        registry=_registry,
    )
)


class Tracing:
    """The process's tracer provider, when the ``OTEL_*`` variables ask for one."""

    def __init__(self, provider: Any | None) -> None:
        self.provider = provider

    @property
    def enabled(self) -> bool:
        return self.provider is not None

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Tracing:
        env = os.environ if environ is None else environ
        exporter_name = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
        wanted = bool(exporter_name and exporter_name != "none") or any(
            env.get(name) for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        )
        if not wanted or env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
            return cls(None)
        if isinstance(trace.get_tracer_provider(), _sdk_provider_type()):
            return cls(trace.get_tracer_provider())  # a second app in this process shares the first's
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

        provider = TracerProvider(
            resource=Resource.create({"service.name": env.get("OTEL_SERVICE_NAME") or "switchboard"})
        )
        if exporter_name == "console":
            exporter: Any = ConsoleSpanExporter()
        else:  # otlp (the default): OTLP over HTTP, endpoint and headers from OTEL_EXPORTER_OTLP_*
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            exporter = OTLPSpanExporter()
        provider.add_span_processor(BatchSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        log.info("tracing on", extra={"event": "tracing_on", "exporter": exporter_name or "otlp"})
        return cls(provider)

    def shutdown(self) -> None:
        """Send the spans still buffered (at app shutdown)."""
        if self.provider is not None:
            self.provider.force_flush(5000)


def _sdk_provider_type() -> type:
    from opentelemetry.sdk.trace import TracerProvider

    return TracerProvider


def _tracing() -> bool:
    """Whether this process has a tracer provider (the ``OTEL_*`` variables, or an embedding
    application's own). Without one every span would be a no-op, so none is entered."""
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def _current(name: str, kind: SpanKind, attributes: dict[str, Any]) -> AbstractContextManager[Span]:
    """A new current span, or without tracing the span already current (what a no-op span is)."""
    if not _tracing():
        return nullcontext(trace.get_current_span())
    return _tracer.start_as_current_span(
        name, kind=kind, attributes=attributes, record_exception=False, set_status_on_exception=False
    )


def _fail(span: Span, error_type: str, message: str = "") -> None:
    if span.is_recording():
        span.set_attribute("error.type", error_type)
        span.set_status(Status(StatusCode.ERROR, message))


@contextmanager
def turn_span(conversation_id: str, user_model: str | None) -> Iterator[Span]:
    """A turn (an answer with its model calls and tool calls)."""
    started = time.perf_counter()
    attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "switchboard",
        "gen_ai.conversation.id": conversation_id,
    }
    if user_model:
        attributes["gen_ai.request.model"] = user_model
    with _current("invoke_agent switchboard", SpanKind.INTERNAL, attributes) as span:
        try:
            yield span
        finally:
            _turn_seconds.observe(time.perf_counter() - started)


def turn_finished(span: Span, finish_reason: str) -> None:
    _turns(finish_reason).inc()
    if span.is_recording():
        span.set_attribute("gen_ai.response.finish_reasons", [finish_reason])
        if finish_reason == "error":
            _fail(span, "error")


def model_call(model: str, provider: str | None, duration_s: float, usage: Any, error_code: str | None) -> None:
    """A model call that has ended: its span (drawn with its true start and end, under the turn's
    span that was current while it ran) and its metrics."""
    input_tokens = getattr(usage, "prompt_tokens", None)
    output_tokens = getattr(usage, "completion_tokens", None)
    if _tracing():
        _model_span(model, provider, duration_s, input_tokens, output_tokens, error_code)
    _model_seconds("chat", model, error_code or "").observe(duration_s)
    if input_tokens:
        _model_tokens(model, "input").inc(input_tokens)
    if output_tokens:
        _model_tokens(model, "output").inc(output_tokens)


def _model_span(
    model: str,
    provider: str | None,
    duration_s: float,
    input_tokens: int | None,
    output_tokens: int | None,
    error_code: str | None,
) -> None:
    end_ns = time.time_ns()
    span = _tracer.start_span(
        f"chat {model}",
        kind=SpanKind.CLIENT,
        start_time=end_ns - int(duration_s * 1e9),
        attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": model},
    )
    if span.is_recording():
        if provider:
            span.set_attribute("gen_ai.provider.name", provider)
        if input_tokens is not None:
            span.set_attribute("gen_ai.usage.input_tokens", input_tokens)
        if output_tokens is not None:
            span.set_attribute("gen_ai.usage.output_tokens", output_tokens)
        if error_code:
            _fail(span, error_code)
    span.end(end_time=end_ns)


@contextmanager
def mcp_span(
    method: str, target: str, *, server: str, address: str | None = None, tool: str | None = None
) -> Iterator[Span]:
    """One MCP request to a server (``tools/call dataviz_chart_csv``); an exception marks it failed
    with the exception's type as ``error.type``."""
    attributes: dict[str, Any] = {"mcp.method.name": method, "switchboard.mcp.server": server}
    if tool is not None:
        attributes["gen_ai.tool.name"] = tool
        attributes["gen_ai.operation.name"] = "execute_tool"
    if address:
        attributes["server.address"] = address
    started = time.perf_counter()
    error_type = ""
    with _current(f"{method} {target}", SpanKind.CLIENT, attributes) as span:
        try:
            yield span
        except BaseException as exc:
            error_type = type(exc).__name__
            _fail(span, error_type, getattr(exc, "message", "") or "")
            raise
        finally:
            _mcp_seconds(method, server, error_type).observe(time.perf_counter() - started)


def tool_call_done(server: str, outcome: str) -> None:
    """A tool call has ended: `ok`, `error` or `denied` (refused before it ran)."""
    _tool_calls(server, outcome).inc()


def hook_span(hook: str, point: str) -> AbstractContextManager[Span]:
    """One policy hook's run (``hook pre_tool``)."""
    return _current(f"hook {point}", SpanKind.INTERNAL, {"switchboard.hook.id": hook, "switchboard.hook.event": point})


def hook_done(span: Span, hook: str, point: str, decision: str, duration_s: float, error: str | None) -> None:
    _hook_runs(point, hook, "error" if error else decision).inc()
    _hook_seconds(point).observe(duration_s)
    if span.is_recording():
        span.set_attribute("switchboard.hook.decision", decision)
        if error:
            _fail(span, "hook_failed", error)


def sessions_changed(by: int) -> None:
    """A websocket connection opened (+1) or closed (-1)."""
    _sessions.inc(by)


@contextmanager
def store_timer(operation: str) -> Iterator[None]:
    started = time.perf_counter()
    error_type = ""
    try:
        yield
    except BaseException as exc:
        error_type = type(exc).__name__
        raise
    finally:
        _store_seconds(operation, error_type).observe(time.perf_counter() - started)


def metrics_text() -> bytes:
    """The Prometheus text of this process, or of every worker process when they share a
    ``PROMETHEUS_MULTIPROC_DIR``."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry)
    return generate_latest(_registry)
