# Sourced by the scripts here (serve, chat, switchboard, debug_mcp_servers, uv, test): make sure
# uv exists and the project's locked environment is installed. SWITCHBOARD_INSTALL=serve installs
# only what serving needs (the project's dependencies, no dependency groups) and removes nothing
# that is there already (a checkout that also runs the tests keeps its test tools);
# SWITCHBOARD_INSTALL=none installs nothing (uv only); anything else installs every group too
# (tests, example servers).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# uv on PATH, or where an earlier run installed it with pip, which need not be on PATH:
# ~/.local/bin (pip --user) or the interpreter's scripts folder (the `uv` package knows).
_switchboard_find_uv() {
  command -v uv >/dev/null 2>&1 && return 0
  local found
  for found in "$HOME/.local/bin/uv" "$(python3 -c 'import uv; print(uv.find_uv_bin())' 2>/dev/null || true)"; do
    if [ -n "$found" ] && [ -x "$found" ]; then
      PATH="$(dirname "$found"):$PATH"
      export PATH
      return 0
    fi
  done
  return 1
}
if ! _switchboard_find_uv; then
  echo "uv not found; installing it with pip" >&2
  python3 -m pip install --quiet --user uv 2>/dev/null || python3 -m pip install --quiet uv
  _switchboard_find_uv || { echo "uv was installed with pip but cannot be found; install it yourself and put it on PATH" >&2; exit 1; }
fi
export LITELLM_LOCAL_MODEL_COST_MAP=True
if [ "${SWITCHBOARD_INSTALL:-all}" = "none" ]; then
  return 0
fi
if [ "${SWITCHBOARD_INSTALL:-all}" = "serve" ]; then
  UV_COMPILE_BYTECODE=1 uv sync --frozen --quiet --no-default-groups --inexact
else
  UV_COMPILE_BYTECODE=1 uv sync --frozen --quiet --all-groups
fi
# The app's own modules as bytecode, as the Docker image has them: where PYTHONDONTWRITEBYTECODE
# is set, Python would otherwise compile them again at every start (a tenth of a second of CPU).
uv run --frozen --no-sync python -m compileall -q backend >/dev/null
