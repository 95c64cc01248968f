"""The model layer: catalogue, streaming calls, error mapping, the offline demo model.

The only package that imports litellm.
"""

import os

# Before litellm is imported anywhere: use the bundled model cost map instead of
# fetching it from the internet at import time.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from switchboard.llm.catalogue import DEMO_MODEL, ModelCatalogue, ModelInfo
from switchboard.llm.deferred import DeferredLLMClient
from switchboard.llm.types import Completed, LLMEvent, Notice, TextDelta, ToolCallRequest, Usage


def __getattr__(name: str) -> object:
    # The real client imports litellm (seconds); only load it when asked for.
    if name in ("LLMClient", "CallReporter"):
        from switchboard.llm import client

        return getattr(client, name)
    raise AttributeError(name)


__all__ = [
    "DEMO_MODEL",
    "Completed",
    "DeferredLLMClient",
    "LLMClient",
    "LLMEvent",
    "ModelCatalogue",
    "ModelInfo",
    "Notice",
    "TextDelta",
    "ToolCallRequest",
    "Usage",
]
