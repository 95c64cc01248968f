"""A turn's events for a page, at most one batch per frame: a fast model's stream (thousands of
`token` events a second) reaches the page as a few events per frame, not one message per piece of
text, each of which cost the page a task, a parse and a draw. A slow stream is not delayed: a batch
of text waits only when the one before went out less than a frame ago, and any other event (a
tool's start, an error, the answer's end) goes at once. The pages following one answer get the
same batches as one another when they keep up, and then share the merged events, so each is
serialized once for all of them, as every other event is."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import AsyncGenerator, Iterable

from .events import RenderEvent, ServerEvent, TokenEvent
from .listeners import END, Subscription

__all__ = ["FRAME_S", "merged", "paced"]

FRAME_S = 1 / 60
_SHARED = 64  # batches whose merged events are kept for the other pages following the same answer
_merges: OrderedDict[tuple[int, ...], tuple[tuple[ServerEvent, ...], list[ServerEvent]]] = OrderedDict()


class _Render:
    """Renders of one round, joined: their finished blocks in order, the last one's open block."""

    __slots__ = ("message_id", "open", "settled")

    def __init__(self, event: RenderEvent) -> None:
        self.message_id = event.message_id
        self.settled = [event.settled]
        self.open = event.open

    def add(self, event: RenderEvent) -> None:
        self.settled.append(event.settled)
        self.open = event.open

    def event(self) -> RenderEvent:
        return RenderEvent(message_id=self.message_id, settled="".join(self.settled), open=self.open)


def merged(events: Iterable[ServerEvent]) -> list[ServerEvent]:
    """`events` with each run of `token`s joined into one and renders of one round joined, the
    page's result the same. A render shows all the text streamed before it, so tokens between two
    renders go before the joined render: the page shows them as raw text only until a render
    replaces it. Other events stay where they are and end a run. Linear in the batch's text.
    The same batch (the same event objects) gets the same merged events back."""
    batch = tuple(events)
    if len(batch) < 2:
        return list(batch)
    key = tuple(map(id, batch))  # the batch is kept with its result, so no id is reused meanwhile
    if (kept := _merges.get(key)) is not None:
        _merges.move_to_end(key)
        return kept[1]
    result = _merge(batch)
    _merges[key] = (batch, result)
    if len(_merges) > _SHARED:
        _merges.popitem(last=False)
    return result


def _merge(events: Iterable[ServerEvent]) -> list[ServerEvent]:
    out: list[ServerEvent | list[str] | _Render] = []
    for event in events:
        last = out[-1] if out else None
        if isinstance(event, TokenEvent):
            if isinstance(last, list):
                last.append(event.text)
            else:
                out.append([event.text])
        elif isinstance(event, RenderEvent) and isinstance(last, _Render) and last.message_id == event.message_id:
            last.add(event)
        elif (
            isinstance(event, RenderEvent)
            and isinstance(last, list)
            and len(out) > 1
            and isinstance(render := out[-2], _Render)
            and render.message_id == event.message_id
        ):
            del out[-2:]
            before = out[-1] if out else None
            if isinstance(before, list):
                before.extend(last)
            else:
                out.append(last)
            render.add(event)
            out.append(render)
        elif isinstance(event, RenderEvent):
            out.append(_Render(event))
        else:
            out.append(event)
    return [_event(item) for item in out]


def _event(item: ServerEvent | list[str] | _Render) -> ServerEvent:
    if isinstance(item, list):
        return TokenEvent(text="".join(item))
    if isinstance(item, _Render):
        return item.event()
    return item


async def paced(subscription: Subscription, frame_s: float = FRAME_S) -> AsyncGenerator[ServerEvent, None]:
    """The subscription's events, those queued within a frame of the last batch merged."""
    queue, loop = subscription.queue, asyncio.get_running_loop()
    sent_at = -frame_s
    try:
        while True:
            batch = [await queue.get()]
            wait = sent_at + frame_s - loop.time()
            if wait > 0 and isinstance(batch[0], (TokenEvent, RenderEvent)):  # text waits; the rest goes now
                await asyncio.sleep(wait)
            while not queue.empty() and batch[-1] is not END:
                batch.append(queue.get_nowait())
            ended = batch[-1] is END
            for event in merged(event for event in batch if event is not END):
                yield event
            if ended:
                return
            sent_at = loop.time()
    finally:
        subscription.turn.leave(subscription)
