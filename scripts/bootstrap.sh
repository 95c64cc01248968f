# Sourced by scripts/serve and scripts/test: make sure uv exists and the
# project's locked environment is installed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! command -v uv >/dev/null 2>&1; then
  echo "uv not found; installing it with pip" >&2
  python3 -m pip install --quiet --user uv 2>/dev/null || python3 -m pip install --quiet uv
  export PATH="$HOME/.local/bin:$PATH"
fi
export LITELLM_LOCAL_MODEL_COST_MAP=True
UV_COMPILE_BYTECODE=1 uv sync --frozen --quiet
