"""The event-stream response notices a client that leaves while nothing is written,
whatever ASGI spec version the server speaks (Starlette's own watches only under 2.3)."""

import asyncio

import pytest

from switchboard.web.sse import EventStreamResponse, frame


@pytest.mark.parametrize("spec_version", ["2.3", "2.4"])
async def test_a_silent_stream_is_closed_when_the_client_leaves(spec_version):
    closed, sent = asyncio.Event(), []
    closes = []

    async def silent():
        try:
            yield frame("token", '{"type":"token","text":"Hi"}')
            await asyncio.sleep(3600)  # a turn waiting for an approval writes nothing
            yield "never"
        finally:
            closed.set()

    messages = [{"type": "http.request", "body": b"", "more_body": False}]

    async def receive():
        if messages:
            return messages.pop()
        await asyncio.sleep(0.1)
        return {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "asgi": {"spec_version": spec_version}}
    response = EventStreamResponse(silent(), on_close=lambda: closes.append(1))
    await asyncio.wait_for(response(scope, receive, send), 5)
    assert closed.is_set() and closes == [1]
    assert (
        sent[0]["type"] == "http.response.start"
        and (b"content-type", b"text/event-stream; charset=utf-8") in sent[0]["headers"]
    )
    assert sent[1]["body"] == b'event: token\ndata: {"type":"token","text":"Hi"}\n\n'  # the wire of docs/protocol.md
