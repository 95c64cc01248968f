# Sourced by scripts/serve, scripts/chat and scripts/test: make sure uv exists and the
# project's locked environment is installed. SWITCHBOARD_INSTALL=serve installs only what
# serving needs (the project's dependencies, no dependency groups) and removes nothing that
# is there already (a checkout that also runs the tests keeps its test tools); anything else
# installs every group too (tests, example servers).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! command -v uv >/dev/null 2>&1; then
  echo "uv not found; installing it with pip" >&2
  python3 -m pip install --quiet --user uv 2>/dev/null || python3 -m pip install --quiet uv
  export PATH="$HOME/.local/bin:$PATH"
fi
export LITELLM_LOCAL_MODEL_COST_MAP=True
if [ "${SWITCHBOARD_INSTALL:-all}" = "serve" ]; then
  UV_COMPILE_BYTECODE=1 uv sync --frozen --quiet --no-default-groups --inexact
else
  UV_COMPILE_BYTECODE=1 uv sync --frozen --quiet --all-groups
fi
# The app's own modules as bytecode, as the Docker image has them: where PYTHONDONTWRITEBYTECODE
# is set, Python would otherwise compile them again at every start (a tenth of a second of CPU).
uv run --frozen --no-sync python -m compileall -q backend >/dev/null
