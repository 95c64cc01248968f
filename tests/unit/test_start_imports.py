"""What a start loads: `switchboard serve` pays for the app's imports before its servers are
ready (docs/benchmarks.md, start-up), so what only a later request or another command needs
stays out. Each check runs in a fresh interpreter, as a start does."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # a fresh interpreter importing the app: a second or two

# Loaded by the first model call or the model library's warm-up after the servers are up
# (litellm, the OpenAI SDK), by a migration (Alembic), by the first page (Jinja2) or DPoP key
# (joserfc), or by `switchboard chat` only.
LATER = ("litellm", "openai", "alembic", "httpx_sse", "switchboard.cli.chat", "jinja2", "joserfc")


def _loaded(tmp_path, code: str) -> dict[str, object]:
    env = {
        **os.environ,
        "SWITCHBOARD_CONFIG_DIR": str(tmp_path / "overrides"),
        "SWITCHBOARD_DATA_DIR": str(tmp_path / "data"),
        "SWITCHBOARD_LOG_DIR": str(tmp_path / "logs"),
    }
    env.pop("PY_KEY_VALUE_DISABLE_BEARTYPE", None)
    report = (
        "import json, os, sys; print(json.dumps({'modules': sorted(sys.modules), "
        "'beartype_off': os.environ.get('PY_KEY_VALUE_DISABLE_BEARTYPE')}))"
    )
    run = subprocess.run(
        [sys.executable, "-c", f"{code}\n{report}"], env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.splitlines()[-1])


def test_building_the_app_loads_neither_the_model_library_nor_alembic_nor_the_chat_client(tmp_path):
    (tmp_path / "data").mkdir()
    loaded = _loaded(
        tmp_path,
        "from switchboard.settings import Settings\nfrom switchboard.web.app import create_app\ncreate_app(Settings())",
    )
    modules = set(loaded["modules"])  # type: ignore[arg-type]
    assert "fastapi" in modules and "fastmcp" in modules, "the check sees what the app loads"
    assert [name for name in LATER if name in modules] == []
    # fastmcp's token stores are loaded, without beartype instrumenting them on import
    assert "key_value.aio" in modules and loaded["beartype_off"] == "true"


def test_the_serve_command_line_loads_no_chat_client(tmp_path):
    loaded = _loaded(
        tmp_path,
        "import contextlib, io\nfrom switchboard.__main__ import main\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['serve', '--help'])",
    )
    modules = set(loaded["modules"])  # type: ignore[arg-type]
    assert "switchboard.settings" in modules
    assert [name for name in ("httpx", "switchboard.cli.chat", "switchboard.chat.events") if name in modules] == []
