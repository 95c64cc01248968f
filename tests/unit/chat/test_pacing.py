"""A turn's events paced for a page: what arrives within a frame is merged (tokens joined, one
round's renders joined), and the page shows the same answer as from the events one by one."""

from __future__ import annotations

import asyncio
import random

from switchboard.chat.events import MessageDone, RenderEvent, ServerEvent, TokenEvent, ToolStart
from switchboard.chat.growing import GrowingText
from switchboard.chat.listeners import END, Subscription
from switchboard.chat.pacing import merged, paced
from switchboard.chat.views.live_render import LiveRender
from tests.unit.chat.test_live_render import ANSWER


def _page(events: list[ServerEvent]) -> tuple[str, str, str]:
    """What the page holds after the events (messages.js's TextBlock): the markdown typed so far,
    the HTML drawn and the raw text after it, not yet rendered."""
    raw, settled, open_, tail = "", "", "", ""
    for event in events:
        if isinstance(event, TokenEvent):
            raw, tail = raw + event.text, tail + event.text
        elif isinstance(event, RenderEvent):
            settled, open_, tail = settled + event.settled, event.open, ""
    return raw, settled + open_, tail


def _stream(text: str, size: int, every: int) -> list[ServerEvent]:
    """The loop's events for `text` in pieces of `size`, with a live render after every `every` pieces."""
    live, grown, out = LiveRender(), GrowingText(), list[ServerEvent]()
    for n, start in enumerate(range(0, len(text), size), 1):
        grown.add(text[start : start + size])
        out.append(TokenEvent(text=text[start : start + size]))
        if n % every == 0:
            settled, last = live.render_now(grown.since(live.settled))
            out.append(RenderEvent(message_id="m", settled=settled, open=last))
    return out


def test_merged_batches_show_the_page_what_the_events_one_by_one_do():
    events = _stream(ANSWER * 4, 7, 5)
    rng = random.Random(7)
    for _ in range(50):
        cuts = sorted(rng.sample(range(1, len(events)), 12))
        shown: list[ServerEvent] = []
        for start, end in zip([0, *cuts], [*cuts, len(events)], strict=True):
            out = merged(events[start:end])
            assert len(out) <= 3, out  # at most: tokens a render covers, the render, tokens after it
            shown.extend(out)
            assert _page(shown) == _page(events[:end])
        assert _page(shown) == _page(events)


def test_other_events_end_a_run_and_keep_their_place():
    tool = ToolStart(call_id="c", tool="t", server="s", arguments={})
    done = MessageDone(message_id="m", finish_reason="stop", html="")
    out = merged(
        [
            TokenEvent(text="a"),
            TokenEvent(text="b"),
            tool,
            RenderEvent(message_id="m", settled="<p>x</p>", open="<p>y"),
            RenderEvent(message_id="n", settled="", open="<p>z"),
            TokenEvent(text="c"),
            done,
        ]
    )
    assert out == [
        TokenEvent(text="ab"),
        tool,
        RenderEvent(message_id="m", settled="<p>x</p>", open="<p>y"),
        RenderEvent(message_id="n", settled="", open="<p>z"),
        TokenEvent(text="c"),
        done,
    ]


class _Turn:
    conversation_id = "c"
    left = False

    def leave(self, subscription: Subscription) -> None:
        self.left = True


async def test_a_backlog_goes_out_as_one_batch_and_the_turn_is_left():
    turn = _Turn()
    subscription = Subscription(turn)
    for n in range(5000):  # a replay after attach, or a page that fell behind: one message, not 5,000
        subscription.queue.put_nowait(TokenEvent(text=f"{n} "))
    subscription.queue.put_nowait(END)
    out = [event async for event in paced(subscription)]
    assert out == [TokenEvent(text="".join(f"{n} " for n in range(5000)))]
    assert turn.left


async def test_a_slow_stream_is_sent_event_by_event():
    subscription = Subscription(_Turn())
    events = paced(subscription, frame_s=0.001)
    for text in ("a", "b", "c"):
        subscription.queue.put_nowait(TokenEvent(text=text))
        assert await asyncio.wait_for(anext(events), 5) == TokenEvent(text=text)
        await asyncio.sleep(0.002)
    await events.aclose()
