"""An answer's text as it streams in."""

from __future__ import annotations

__all__ = ["GrowingText"]


class GrowingText:
    """Text that grows piece by piece. `text += piece` on an attribute copies the whole text
    every time (CPython extends a string in place only in a local variable), which made a
    20,000-token answer quadratic; here a piece costs its own length and the text is joined
    when read (a live render, the end of a round)."""

    __slots__ = ("_length", "_parts")

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._length = 0

    def add(self, piece: str) -> None:
        if piece:
            self._parts.append(piece)
            self._length += len(piece)

    def __len__(self) -> int:
        return self._length

    def endswith(self, suffix: str) -> bool:
        return bool(self._parts) and self.text().endswith(suffix)

    def since(self, start: int) -> str:
        """The text after its first `start` characters, copying only the pieces that hold it (a
        live render reads only the part of the answer not yet rendered for good)."""
        pieces: list[str] = []
        end = self._length
        for part in reversed(self._parts):
            if end <= start:
                break
            end -= len(part)
            pieces.append(part[start - end :] if end < start else part)
        return "".join(reversed(pieces))

    def text(self) -> str:
        if len(self._parts) > 1:
            self._parts[:] = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""
