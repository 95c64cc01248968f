"""The model layer: catalogue, streaming calls, error mapping, the offline demo model.

The only package that imports litellm.
"""

from typing import TYPE_CHECKING

from switchboard.lazy import lazy_names
from switchboard.llm.catalogue import DEMO_MODEL, ModelCatalogue, ModelInfo
from switchboard.llm.deferred import DeferredLLMClient
from switchboard.llm.types import Completed, LLMEvent, Notice, TextDelta, ToolCallRequest, Usage

if TYPE_CHECKING:
    from switchboard.llm.client import CallReporter, LLMClient

# The real client imports litellm (seconds; switchboard/environment.py keeps it off the network):
# only loaded when asked for.
__getattr__ = lazy_names(__name__, {"LLMClient": "client", "CallReporter": "client"})


__all__ = [
    "DEMO_MODEL",
    "CallReporter",
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
