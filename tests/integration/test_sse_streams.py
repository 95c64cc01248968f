"""The event streams (`/api/chat`, `/v1`) carry keep-alive comments while a turn is quiet, and
their readers skip them: the terminal client, which reads `/api/chat` with httpx-sse into the
typed event models (also against servers that are not this version, or not Switchboard), and
the `openai` package on `/v1`."""

from __future__ import annotations

import argparse
import io
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import openai
import pytest

from switchboard.cli import chat as cli_chat
from switchboard.web import sse
from tests.support.doors import served
from tests.support.harness import make_settings, write_toolbox_site
from tests.support.llm_double import TextReply, ToolCall, ToolCallReply


@pytest.fixture(scope="module")
def site(tmp_path_factory, llm):
    tmp = tmp_path_factory.mktemp("cli_sse")
    write_toolbox_site(tmp, llm)
    with served(make_settings(tmp, llm_max_attempts=1)) as (base, _):
        yield base


@pytest.fixture(autouse=True)
def quick_pings(monkeypatch, llm):
    llm.reset()
    monkeypatch.setattr(sse, "PING_S", 0.05)  # a keep-alive comment every 50 ms of quiet


def _args(url: str, question: str) -> argparse.Namespace:
    return argparse.Namespace(question=question, model=None, url=url, token=None, conversation=None, incognito=True)


def _run(url: str, question: str, stdin: str = "") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli_chat.run(_args(url, question), stdin=io.StringIO(stdin), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_the_stream_carries_keep_alive_comments_while_a_turn_is_quiet(site, llm):
    llm.response_delay_s = 0.5
    llm.enqueue(TextReply("Hello there."))
    with httpx.stream("POST", f"{site}/api/chat", json={"content": "hi", "incognito": True}, timeout=30) as response:
        lines = list(response.iter_lines())
    assert ": ping" in lines  # a comment line, ignored by every SSE reader
    # (the 50 ms ping may also come between the last event and the stream's end: a comment too)
    fields = [line for line in lines if line and not line.startswith(":")]
    assert fields[-2] == "event: message_done" and fields[-1].startswith("data: ") and lines[-1] == ""


def test_the_terminal_reads_events_between_keep_alive_comments(site, llm):
    llm.response_delay_s = 0.3
    llm.enqueue(ToolCallReply([ToolCall("toolbox_delete_everything", "{}")]), TextReply("All gone."))
    code, out, err = _run(site, "delete everything", stdin="y\n")
    assert code == cli_chat.ANSWERED, err
    assert out == "All gone.\n"  # the tokens, in order, nothing of the comments
    assert "toolbox_delete_everything wants to run" in err and "✓ toolbox_delete_everything" in err


def test_an_openai_client_reads_a_stream_with_keep_alive_comments(site, llm):
    llm.response_delay_s = 0.3
    llm.enqueue(TextReply("Quiet, then an answer."))
    token = httpx.post(f"{site}/api/tokens", json={"name": "sse"}).json()["token"]
    with openai.OpenAI(base_url=f"{site}/v1", api_key=token, max_retries=0, timeout=30) as client:
        stream = client.chat.completions.create(
            model="double", stream=True, messages=[{"role": "user", "content": "hi"}]
        )
        chunks = list(stream)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Quiet, then an answer."
    assert chunks[-1].choices[0].finish_reason == "stop"


class _Stream(BaseHTTPRequestHandler):
    """A server of another version: CRLF line ends, a kind of event this client does not know,
    a comment, and an event split over two writes."""

    body = (
        b": hello\r\n\r\n"
        b'event: weather\r\ndata: {"type":"weather","sky":"blue"}\r\n\r\n'
        b'event: token\r\ndata: {"type":"token","text":"Sunny."}\r\n\r\n'
        b'event: message_done\r\ndata: {"type":"message_done","message_id":"m","finish_reason":"stop","html":""}\r\n\r\n'
    )
    content_type = "text/event-stream"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", self.content_type)
        self.end_headers()
        half = len(self.body) // 2
        for part in (self.body[:half], self.body[half:]):
            self.wfile.write(part)
            self.wfile.flush()

    def log_message(self, *args: object) -> None:
        pass


class _Page(_Stream):
    body, content_type = b"<html>a login page</html>", "text/html"


def _server(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def other_version():
    yield from _server(_Stream)


@pytest.fixture
def login_page():
    yield from _server(_Page)


def test_an_unknown_kind_of_event_is_skipped(other_version):
    code, out, err = _run(other_version, "weather?")
    assert (code, out) == (cli_chat.ANSWERED, "Sunny."), err


def test_an_answer_that_is_not_an_event_stream_fails_in_one_line(login_page):
    code, out, err = _run(login_page, "hi")
    assert code == cli_chat.FAILED and out == ""
    assert err.strip().splitlines() == [
        f"error: {login_page} did not answer with an event stream "
        "(Expected response header Content-Type to contain 'text/event-stream', "
        "got 'text/html')"
    ]
