import os
import sys
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# Tests must not pick up the developer's own model keys or .env.
for _key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
    os.environ.pop(_key, None)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # `tests.support...`
