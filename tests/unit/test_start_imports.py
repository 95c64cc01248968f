"""What a start loads: `switchboard serve` pays for the app's imports before its servers are
ready (docs/benchmarks.md, start-up), so what only a later request or another command needs
stays out. Each check runs in a fresh interpreter, as a start does."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from switchboard.environment import DEFAULTS

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
    for name in DEFAULTS:  # set by the entry points (switchboard/environment.py), not by the tests' own
        env.pop(name, None)
    watch = (  # each variable's value when the library that reads it is first imported
        "import os, sys\nat_import = {}\n"
        "def _seen(event, args):\n"
        "    if event == 'import' and args[0] in ('litellm', 'key_value.aio') and args[0] not in at_import:\n"
        "        at_import[args[0]] = {n: os.environ.get(n) for n in "
        f"{sorted(DEFAULTS)!r}}}\n"
        "sys.addaudithook(_seen)"
    )
    report = (
        "import json, os, sys; print(json.dumps({'modules': sorted(sys.modules), 'at_import': at_import, "
        "'beartype_off': os.environ.get('PY_KEY_VALUE_DISABLE_BEARTYPE')}))"
    )
    run = subprocess.run(
        [sys.executable, "-c", f"{watch}\n{code}\n{report}"], env=env, capture_output=True, text=True, timeout=280
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.splitlines()[-1])


def test_building_the_app_loads_neither_the_model_library_nor_alembic_nor_the_chat_client(tmp_path):
    (tmp_path / "data").mkdir()
    loaded = _loaded(
        tmp_path,
        "from switchboard.environment import set_defaults\nset_defaults()  # as `switchboard serve` does first\n"
        "from switchboard.settings import Settings\nfrom switchboard.web.app import create_app\ncreate_app(Settings())",
    )
    modules = set(loaded["modules"])  # type: ignore[arg-type]
    assert "fastapi" in modules and "fastmcp" in modules, "the check sees what the app loads"
    assert [name for name in LATER if name in modules] == []
    # fastmcp's token stores are loaded, without beartype instrumenting them on import
    assert "key_value.aio" in modules
    assert loaded["at_import"]["key_value.aio"]["PY_KEY_VALUE_DISABLE_BEARTYPE"] == "true"  # type: ignore[index]


@pytest.mark.timeout(300)  # the model library's import: seconds, more on a busy machine
def test_the_model_library_is_imported_with_its_local_cost_map_when_the_app_loads_it(tmp_path):
    """litellm fetches its cost map from the internet at import unless told not to: the app factory
    (an entry point) sets that before anything can load it; no package sets it at its import."""
    (tmp_path / "data").mkdir()
    loaded = _loaded(
        tmp_path,
        "import os\nfrom switchboard.settings import Settings\nfrom switchboard.web.app import create_app\n"
        "assert 'LITELLM_LOCAL_MODEL_COST_MAP' not in os.environ, 'set at import'\n"
        "create_app(Settings())\nfrom switchboard.llm import LLMClient",
    )
    assert "litellm" in loaded["modules"]  # type: ignore[operator]
    assert loaded["at_import"]["litellm"]["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"  # type: ignore[index]


def test_the_serve_command_line_loads_no_chat_client(tmp_path):
    loaded = _loaded(
        tmp_path,
        "import contextlib, io\nfrom switchboard.__main__ import main\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['serve', '--help'])",
    )
    modules = set(loaded["modules"])  # type: ignore[arg-type]
    assert "switchboard.settings" in modules
    assert loaded["beartype_off"] == "true", "the command line sets the environment's defaults first"
    assert [name for name in ("httpx", "switchboard.cli.chat", "switchboard.chat.events") if name in modules] == []
