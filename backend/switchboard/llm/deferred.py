"""An LLMClient that loads litellm off the event loop.

litellm takes seconds to import; the app must answer `/healthz` at once, so
the real client is built in a worker thread, started at app start-up
(`warm_up`) and awaited by the first call that needs it. The garbage collector
rests while it loads (its objects live as long as the process), then they are
frozen out of later collections: five full collections of up to 150 ms each,
holding the event loop, went with that."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import threading
from collections.abc import AsyncGenerator, Sequence
from typing import TYPE_CHECKING, Any

from switchboard.config.models import ModelConfig
from switchboard.llm.types import LLMEvent

if TYPE_CHECKING:
    from switchboard.llm.client import LLMClient

__all__ = ["DeferredLLMClient"]


class DeferredLLMClient:
    def __init__(self, **client_kwargs: Any) -> None:
        self._kwargs = client_kwargs
        self._loading: asyncio.Future[LLMClient] | None = None

    @staticmethod
    def _build(kwargs: dict[str, Any]) -> LLMClient:
        from switchboard.llm.client import LLMClient

        return LLMClient(**kwargs)

    def warm_up(self) -> None:
        """Start building the real client in a daemon thread of its own: not the loop's default
        executor, whose threads the process waits for when it stops, so that stopping the app
        (Ctrl-C) never waits for seconds of litellm import that nobody needs any more."""
        if self._loading is not None:
            return
        loop = asyncio.get_running_loop()
        loading: asyncio.Future[LLMClient] = loop.create_future()
        self._loading = loading
        kwargs = self._kwargs

        def settle(client: LLMClient | None, error: BaseException | None) -> None:
            if loading.done():
                return
            if error is not None:
                loading.set_exception(error)
            else:
                loading.set_result(client)  # type: ignore[arg-type]

        def build() -> None:
            client, error = None, None
            collecting = gc.isenabled()
            gc.disable()  # the import makes objects that live as long as the process: no use collecting meanwhile
            try:
                client = self._build(kwargs)
            except BaseException as exc:
                error = exc
            finally:
                gc.freeze()  # and no later collection walks them (as at start-up: web/boot.py)
                if collecting:
                    gc.enable()
            with contextlib.suppress(RuntimeError):  # the loop has closed: the app has stopped
                loop.call_soon_threadsafe(settle, client, error)

        threading.Thread(target=build, name="llm-warm-up", daemon=True).start()

    async def client(self) -> LLMClient:
        self.warm_up()
        assert self._loading is not None
        return await asyncio.shield(self._loading)

    async def aclose(self) -> None:
        """Closes the real client's connection pools, if it was built."""
        if (
            self._loading is not None
            and self._loading.done()
            and not self._loading.cancelled()
            and self._loading.exception() is None
        ):
            await self._loading.result().aclose()

    async def stream(
        self, model: ModelConfig, messages: Sequence[Any], tools: list[dict[str, Any]] | None, **kwargs: Any
    ) -> AsyncGenerator[LLMEvent, None]:
        client = await self.client()
        async for event in client.stream(model, messages, tools, **kwargs):
            yield event

    async def complete(self, model: ModelConfig, messages: list[dict[str, Any]], **kwargs: Any) -> str:
        client = await self.client()
        return await client.complete(model, messages, **kwargs)
