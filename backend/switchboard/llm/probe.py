"""Is a keyless local model's server there at all? Asked once at start-up and after a reload,
so that a local model whose server is down is not made the default before anyone tries it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

import httpx

from switchboard.config.models import ModelConfig

__all__ = ["unreachable_local_models"]


async def unreachable_local_models(models: Iterable[ModelConfig], timeout_s: float = 3.0) -> dict[str, str]:
    """Model name -> why its server cannot be reached, for the entries with an `api_base` and no
    `api_key_env` (Ollama, vLLM, LM Studio). Any HTTP answer to `GET api_base/models` counts as
    reachable: only the model's own call can tell whether the model itself works."""
    local = [m for m in models if m.api_base and not m.api_key_env and not m.is_demo]
    if not local:
        return {}
    async with httpx.AsyncClient(timeout=timeout_s) as client:

        async def reason(model: ModelConfig) -> str | None:
            url = f"{(model.api_base or '').rstrip('/')}/models"
            try:
                await client.get(url)
            except (httpx.HTTPError, OSError) as exc:
                # the error module imports the model library (seconds): only once a server is down
                from switchboard.llm._errors import unreachable

                return unreachable(exc, model.api_base)
            return None

        reasons = await asyncio.gather(*(reason(model) for model in local))
    return {model.name: why for model, why in zip(local, reasons, strict=True) if why is not None}
