"""The type checker follows a new event kind through every door.

`scripts/test` runs mypy over `backend/switchboard` before pytest. This test shows what that
step guards: with one more kind in `ServerEvent` (events.py read from a patched copy through
mypy's `--shadow-file`, the real file untouched), each door that switches on the kind and ends
with `assert_never` fails the check, and nothing else does.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "backend" / "switchboard" / "chat" / "events.py"
# The doors that match over every event kind (the websocket and SSE doors serialize any event).
DOORS = {"backend/switchboard/cli/chat.py", "backend/switchboard/web/v1/door.py"}


def _with_probe_kind(source: str) -> str:
    probe = 'class ProbeEvent(_Event):\n    type: Literal["probe"] = "probe"\n\n\nServerEvent = (\n'
    patched = source.replace("ServerEvent = (\n", probe, 1)
    patched, added = re.subn(r"(\n    \| TaskEvent\n)\)", r"\1    | ProbeEvent\n)", patched, count=1)
    assert added == 1 and "class ProbeEvent" in patched, "ServerEvent changed shape: update this test"
    return patched


def _mypy(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cache = tmp_path / "mypy_cache"
    if (ROOT / ".mypy_cache").is_dir():  # a copy of the warm cache: seconds instead of minutes
        shutil.copytree(ROOT / ".mypy_cache", cache)
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(cache), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=540,
    )


@pytest.mark.slow
@pytest.mark.timeout(600)  # a cold cache reads litellm and the MCP SDK: minutes
def test_a_new_event_kind_fails_the_type_check_in_every_door_that_forgets_it(tmp_path):
    shadow = tmp_path / "events.py"
    shadow.write_text(_with_probe_kind(EVENTS.read_text()))

    result = _mypy(tmp_path, "--shadow-file", str(EVENTS), str(shadow))

    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert result.returncode == 1, result.stdout + result.stderr
    flagged = {line.split(":", 1)[0] for line in errors if '"assert_never" has incompatible type "ProbeEvent"' in line}
    assert flagged == DOORS, result.stdout
    assert len(errors) == len([e for e in errors if "ProbeEvent" in e]), result.stdout  # no other error


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_kind_only_the_page_shows_is_named_once_for_every_door(tmp_path):
    """`PAGE_ONLY` is the one list of kinds a text door skips: a new kind added there passes
    every door without touching it."""
    source = _with_probe_kind(EVENTS.read_text())
    shadow = tmp_path / "events.py"
    shadow.write_text(source.replace("PAGE_ONLY: Final = (", "PAGE_ONLY: Final = (ProbeEvent, ", 1))
    assert "(ProbeEvent, " in shadow.read_text(), "PAGE_ONLY changed shape: update this test"

    result = _mypy(tmp_path, "--shadow-file", str(EVENTS), str(shadow))

    assert result.returncode == 0, result.stdout + result.stderr
