"""The model layer: catalogue, streaming calls, error mapping, the offline demo model.

The only package that imports litellm.
"""

import os

# Before litellm is imported anywhere: use the bundled model cost map instead of
# fetching it from the internet at import time.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from switchboard.llm.catalogue import DEMO_MODEL, ModelCatalogue, ModelInfo  # noqa: E402
from switchboard.llm.client import CallReporter, LLMClient  # noqa: E402
from switchboard.llm.types import Completed, LLMEvent, TextDelta, ToolCallRequest, Usage  # noqa: E402

__all__ = [
    "DEMO_MODEL",
    "CallReporter",
    "Completed",
    "LLMClient",
    "LLMEvent",
    "ModelCatalogue",
    "ModelInfo",
    "TextDelta",
    "ToolCallRequest",
    "Usage",
]
