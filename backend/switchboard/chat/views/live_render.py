"""An answer rendered live as it streams, at a cost per character that does not grow with the
answer: each finished top-level block is rendered (and sent) once, and only the last block, the
one still growing, again. Rendering the whole answer every time made each render cost the
answer's length, and the page re-drew it all."""

from __future__ import annotations

import asyncio

from .render import INLINE_CHARS, render_blocks, rendered

__all__ = ["RENDER_AFTER_CHARS", "LiveRender", "final_html"]

# A render comes after the turn loop's interval, or sooner once this much text came since the last
# one: at a fast model's pace the page then draws a few KB at a time, not a quarter second's worth
# (and never holds much raw text).
RENDER_AFTER_CHARS = 2048


class LiveRender:
    """One round's text: which part of it has been rendered for good (`settled` characters, sent
    once) and how long the rest was at the last render."""

    __slots__ = ("_done", "_rest", "settled")

    def __init__(self) -> None:
        self.settled = 0
        self._rest = 0
        self._done: list[str] = []  # the settled blocks' HTML, as sent

    def due(self, length: int, *, waited: bool = True) -> bool:
        """Whether to render the text, `length` characters long now, `waited` the interval since the
        last render: only once the text not yet settled grew by a quarter (and 64 characters). A
        render costs that text's length, so all of them together cost time linear in the answer
        even while one block (a long code block, a long list) keeps growing."""
        grown = length - self.settled - self._rest
        return (waited or grown >= RENDER_AFTER_CHARS) and grown >= self._rest * 0.25 + 64

    @property
    def started(self) -> bool:
        """Whether this text has been rendered live at all."""
        return self.settled + self._rest > 0

    def behind(self, length: int) -> bool:
        """Whether the text has grown since the last render."""
        return length > self.settled + self._rest

    def render_now(self, rest: str) -> tuple[str, str]:
        """The text after `settled` (`rest`) rendered: (HTML of the blocks it finished, to be
        appended to what was sent before; HTML of its last block, replacing the last one sent)."""
        chars, done, last = render_blocks(rest)
        self.settled += chars
        self._rest = len(rest) - chars
        if done:
            self._done.append(done)
        return done, last

    def final(self, text: str) -> tuple[str, str] | None:
        """The whole answer `text`, which begins with this round's text, in two parts: the settled
        blocks' HTML (as sent) and the text after them, still to render; together they are
        `render_markdown(text)`. None where a link's reference definition (`[name]: url`) may sit
        in another part than the link."""
        if "]:" in text:
            return None
        return "".join(self._done), text[self.settled :]

    async def render(self, rest: str) -> tuple[str, str]:
        """`render_now`, in a thread unless the text is short."""
        if len(rest) <= INLINE_CHARS:
            return self.render_now(rest)
        return await asyncio.to_thread(self.render_now, rest)


async def final_html(live: LiveRender | None, text: str) -> tuple[str, int]:
    """`text` rendered whole, and how many of its first characters are the live renders' settled
    blocks as sent: from the live renders of its first round, when it has them, only its rest is
    rendered again (a 200 KB answer cost a whole render after the model's last token)."""
    parts = live.final(text) if live is not None else None
    if parts is None:
        return await rendered(text), 0
    done, rest = parts
    return done + await rendered(rest), len(done)
