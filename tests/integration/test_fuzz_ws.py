"""Property: any malformed or hostile client message gets one `error` event,
the connection stays open, and nothing is logged as an unhandled exception.

Thousands of messages go over ONE real websocket (uvicorn in a thread, the
`websockets` client): random JSON, every field of every message type with a
wrong type, missing and unknown fields, huge strings, deep nesting, unicode,
binary frames, unknown types, and answers to approvals and questions nobody
asked.  A valid `cancel` (nothing to cancel) gets no answer; a final valid
chat must still work."""

from __future__ import annotations

import json
import logging
import threading
import time
from contextlib import contextmanager

import httpx
import pytest
import uvicorn
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.sync.client import connect

from switchboard.services import build_services
from switchboard.web.app import create_app
from tests.support.harness import double_model, free_port, make_settings, write_config
from tests.support.llm_double import LLMDouble, TextReply

EXAMPLES = 2000
ERROR_CODES = {"bad_request", "not_found", "llm_error", "forbidden"}
MAX_MESSAGE_CHARS = 1_000_000  # web/ws.py MAX_MESSAGE_BYTES


@pytest.fixture(scope="module")
def double():
    with LLMDouble() as running:
        yield running


@pytest.fixture(scope="module")
def site(tmp_path_factory, double):
    tmp = tmp_path_factory.mktemp("fuzz")
    write_config(tmp / "defaults", models=[double_model(double)], default_model="double")
    port = free_port()
    settings_ = make_settings(tmp, port=port)
    services = build_services(settings_, environ={"DOUBLE_KEY": "k"})
    with _serve(create_app(settings_, services=services), port) as base:
        yield base, settings_.log_dir


@contextmanager
def _serve(app, port: int):
    """uvicorn in a thread, like harness.serve_app, but without websocket
    keepalive pings: they draw from the `random` module in the server's
    thread, which Hypothesis reports as strategies using `random`."""
    server = uvicorn.Server(
        uvicorn.Config(
            app, host="127.0.0.1", port=port, log_level="warning", ws="websockets-sansio", ws_ping_interval=None
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the app did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


# -- strategies ---------------------------------------------------------------------

HOSTILE_TEXT = [
    "\ud800",
    "\udfff",
    "a\ud83dz",
    "\x00",
    "\u202e",
    "😀" * 50,
    "<script>alert(1)</script>",
    "../../etc/passwd",
    "%s%n",
    "\\",
    '"',
    "{{7*7}}",
    "Ω" * 1000,
]
texts = st.one_of(st.text(max_size=40), st.text(st.characters(), max_size=10), st.sampled_from(HOSTILE_TEXT))
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), texts)
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4), max_leaves=12
)


def _not(*accepted: type) -> st.SearchStrategy:
    """JSON values that are none of `accepted` (bool is not an int here)."""
    return json_values.filter(
        lambda v: not (isinstance(v, accepted) and not (isinstance(v, bool) and bool not in accepted))
    )


# pydantic's lax bools accept 0/1 and words like "yes"/"off"; these never pass
not_bool = st.one_of(
    st.none(),
    st.integers(min_value=2),
    st.integers(max_value=-1),
    st.text(min_size=1).map(lambda s: "x" + s),
    st.lists(scalars, max_size=3),
    st.dictionaries(texts, scalars, max_size=3),
)
not_str = _not(str)
not_opt_str = json_values.filter(lambda v: v is not None and not isinstance(v, str))
not_str_list = st.one_of(
    _not(list).filter(lambda v: v is not None),
    st.lists(not_str, min_size=1, max_size=3).map(lambda items: ["ok", *items]),
)
not_dict = json_values.filter(lambda v: v is not None and not isinstance(v, dict))
not_action = st.one_of(not_str, texts.filter(lambda s: s not in ("accept", "decline", "cancel")))

# message type -> (a valid base, {field: strategy of values it must refuse})
SHAPES = {
    "chat": (
        {"type": "chat", "content": "hello"},
        {
            "content": not_str,
            "model": not_opt_str,
            "tools": not_str_list,
            "files": st.one_of(not_str_list, st.just(["f"] * 21)),
            "conversation_id": not_opt_str,
            "compliance_level": not_opt_str,
        },
    ),
    "approval_response": (
        {"type": "approval_response", "call_id": "c1", "approved": True},
        {"call_id": not_str, "approved": not_bool, "arguments": not_dict, "remember": not_bool},
    ),
    "elicitation_response": (
        {"type": "elicitation_response", "request_id": "r1", "action": "accept"},
        {"request_id": not_str, "action": not_action, "content": not_dict},
    ),
    "cancel": ({"type": "cancel"}, {}),
}
REQUIRED = {
    "chat": ["content"],
    "approval_response": ["call_id", "approved"],
    "elicitation_response": ["request_id", "action"],
}
KNOWN_FIELDS = {
    "type",
    "content",
    "model",
    "tools",
    "files",
    "conversation_id",
    "compliance_level",
    "call_id",
    "approved",
    "arguments",
    "remember",
    "request_id",
    "action",
    "incognito",
    "incognito_state",
    "edit_of",
    "regenerate",
    "resources",
}


@st.composite
def wrong_field(draw) -> dict:
    kind = draw(st.sampled_from(["chat", "approval_response", "elicitation_response"]))
    base, fields = SHAPES[kind]
    name = draw(st.sampled_from(sorted(fields)))
    return {**base, name: draw(fields[name])}


@st.composite
def missing_field(draw) -> dict:
    kind = draw(st.sampled_from(sorted(REQUIRED)))
    base, _ = SHAPES[kind]
    name = draw(st.sampled_from(REQUIRED[kind]))
    return {k: v for k, v in base.items() if k != name}


@st.composite
def unknown_field(draw) -> dict:
    kind = draw(st.sampled_from(sorted(SHAPES)))
    key = draw(texts.filter(lambda k: k not in KNOWN_FIELDS))
    return {**SHAPES[kind][0], key: draw(json_values)}


unknown_type = st.one_of(
    st.dictionaries(texts.filter(lambda k: k != "type"), json_values, max_size=4),  # no type at all
    st.fixed_dictionaries({"type": texts.filter(lambda t: t not in SHAPES)}, optional={"content": texts}),
    st.fixed_dictionaries({"type": not_str}),
)
# Well-formed answers for approvals and questions this connection was never asked.
unasked = st.one_of(
    st.fixed_dictionaries(
        {"type": st.just("approval_response"), "call_id": texts, "approved": st.booleans()},
        optional={"arguments": st.dictionaries(texts, json_values, max_size=3), "remember": st.booleans()},
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("elicitation_response"),
            "request_id": texts,
            "action": st.sampled_from(["accept", "decline", "cancel"]),
        },
        optional={"content": st.dictionaries(texts, json_values, max_size=3)},
    ),
)
# Valid chats whose values the turn refuses at once (no model call): one `error`, no message_done.
refused_chat = st.one_of(
    st.fixed_dictionaries(
        {"type": st.just("chat"), "content": texts, "model": texts.map(lambda s: "no-such-model-" + s)}
    ),
    st.fixed_dictionaries(
        {"type": st.just("chat"), "content": texts, "files": st.lists(texts, min_size=1, max_size=3)}
    ),
    st.fixed_dictionaries(
        {"type": st.just("chat"), "content": texts, "compliance_level": texts.map(lambda s: "Level-" + s)}
    ),
)


def _nested(depth: int, kind: str) -> str:
    if kind == "list":
        return "[" * depth + "]" * depth
    if kind == "object":
        return '{"a":' * depth + "1" + "}" * depth
    return '{"type": "chat", "content": "x", "tools": ' + "[" * depth + "]" * depth + "}"


deep = st.builds(
    _nested, st.sampled_from([64, 199, 201, 1000, 100_000]), st.sampled_from(["list", "object", "in-field"])
)
HUGE = [
    "x" * (MAX_MESSAGE_CHARS + 1),
    json.dumps({"type": "chat", "content": "y" * 200_001}),  # over the content limit, under the message limit
    json.dumps({"type": "chat", "content": "z" * MAX_MESSAGE_CHARS}),
    json.dumps({"type": "t" * 500_000}),
    json.dumps({"type": "approval_response", "call_id": "c" * 900_000, "approved": True}),
]
huge = st.sampled_from(HUGE)
not_json = st.one_of(
    texts.filter(lambda s: _sendable(s) and not _is_json(s)),
    st.sampled_from(["{", "}", "{'type': 'chat'}", "NaN", "[1,]", "", '{"type": "cancel"} {"type": "cancel"}']),
)


def _sendable(text: str) -> bool:
    """A text frame must be UTF-8: lone surrogates travel only inside JSON escapes."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _dumps(value) -> str:
    return json.dumps(value)  # ensure_ascii: lone surrogates travel as \ud800 escapes


# A frame is (text or bytes, whether an answer is expected).
answered_json = st.one_of(
    wrong_field(),
    missing_field(),
    unknown_field(),
    unknown_type,
    unasked,
    refused_chat,
    json_values.filter(lambda v: not isinstance(v, dict)),
)
frames = st.one_of(
    answered_json.map(lambda v: (_dumps(v), True)),
    not_json.map(lambda s: (s, True)),
    deep.map(lambda s: (s, True)),
    huge.map(lambda s: (s, True)),
    st.binary(max_size=64).map(lambda b: (b, True)).filter(lambda f: not _is_json_bytes(f[0])),
    answered_json.map(lambda v: (_dumps(v).encode(), True)),  # JSON in a binary frame
    st.just((b"\xff\xfe" + b"not utf-8", True)),
    # nothing to cancel: no answer
    st.builds(
        lambda pad, end: (f'{pad}{{"type": "cancel"}}{end}', False),
        st.text(" \t\r\n", max_size=2),
        st.text(" \n", max_size=2),
    ),
    st.just((b'{"type":"cancel"}', False)),
)


def _is_json_bytes(data: bytes) -> bool:
    try:
        return _is_json(data.decode("utf-8"))
    except UnicodeDecodeError:
        return False


# -- the property ----------------------------------------------------------------


@pytest.mark.timeout(180)
def test_hostile_messages_each_get_an_error_and_the_connection_stays_open(site, double, caplog):
    base, log_dir = site
    caplog.set_level(logging.WARNING)
    uvicorn_log = logging.getLogger("uvicorn")  # does not propagate to the root logger
    uvicorn_log.addHandler(caplog.handler)
    seen: dict[str, int] = {}
    started = time.monotonic()
    try:
        with connect(base.replace("http", "ws") + "/ws", max_size=None, open_timeout=30, ping_interval=None) as ws:
            assert json.loads(ws.recv(timeout=30))["type"] == "session"

            @settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
            @given(frames)
            def each_frame_is_answered(frame):
                data, answered = frame
                ws.send(data)
                if not answered:
                    return
                event = json.loads(ws.recv(timeout=30))
                shown = data[:120] if isinstance(data, (str, bytes)) else data
                assert event["type"] == "error", (shown, event)
                assert event["code"] in ERROR_CODES, (shown, event)
                assert isinstance(event["message"], str) and event["message"]
                seen[event["code"]] = seen.get(event["code"], 0) + 1

            each_frame_is_answered()

            # The connection is still open, and a valid chat is answered in full
            # (no answer left over from the messages above comes first).
            double.enqueue(TextReply("still here"))
            ws.send(json.dumps({"type": "chat", "content": "are you there?"}))
            events = []
            while not events or events[-1]["type"] != "message_done":
                events.append(json.loads(ws.recv(timeout=30)))
            assert [e["type"] for e in events if e["type"] != "render"][-1] == "message_done"
            assert "".join(e["text"] for e in events if e["type"] == "token") == "still here"
            assert not any(e["type"] == "error" for e in events)
    finally:
        uvicorn_log.removeHandler(caplog.handler)
    print(f"{sum(seen.values())} errors in {time.monotonic() - started:.1f} s: {seen}")
    assert sum(seen.values()) >= EXAMPLES // 2
    assert {"bad_request", "not_found"} <= set(seen)

    problems = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not problems, [(r.name, r.getMessage()) for r in problems]
    assert httpx.get(f"{base}/healthz").status_code == 200
    entries = [json.loads(line) for line in (log_dir / "app.jsonl").read_text().splitlines()]
    assert not [e for e in entries if e.get("level") in ("error", "critical") or "exc" in e]
