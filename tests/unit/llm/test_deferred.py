"""The deferred client loads litellm in a thread of its own while the app serves: the garbage
collector rests meanwhile (the import makes long-lived objects by the hundred thousand, and each
full collection it set off held the event loop for up to 150 ms), then what loaded is frozen.
In a fresh interpreter, where litellm is not loaded yet."""

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # a fresh interpreter imports litellm: ~3 s

SCRIPT = """
import asyncio, gc, json, os
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
from switchboard.llm.deferred import DeferredLLMClient

full = []
gc.callbacks.append(lambda phase, info: full.append(1) if phase == "stop" and info["generation"] == 2 else None)

async def main():
    frozen = gc.get_freeze_count()
    client = DeferredLLMClient(environ={})
    await client.client()
    print(json.dumps({"full": len(full), "enabled": gc.isenabled(), "frozen": gc.get_freeze_count() - frozen,
                      "litellm": "litellm" in __import__("sys").modules}))
    await client.aclose()

asyncio.run(main())
"""


def test_the_collector_rests_while_litellm_loads_and_what_loaded_is_frozen():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, check=True)
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["litellm"] and found["enabled"]
    assert found["full"] == 0, "a full collection ran while litellm loaded"
    assert found["frozen"] > 100_000
