"""A CallSink for driving ServerPool/ServerConnection directly in tests: it
records progress, declines every question and answers sampling with fixed text."""

from __future__ import annotations

from typing import Any

__all__ = ["Sink"]


class Sink:
    def __init__(self, sample_answer: str = "") -> None:
        self.progress_seen: list[tuple[float, float | None, str | None]] = []
        self.sample_answer = sample_answer

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress_seen.append((progress, total, message))

    async def log(self, level: str, message: str) -> None:
        pass

    async def elicit(self, message: str, schema: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
        return ("decline", None)

    async def sample(self, messages: list[dict[str, Any]], system_prompt: str | None, max_tokens: int) -> str:
        return self.sample_answer
