# Switchboard: `docker compose up` (see docker-compose.yml), or
#   docker build -t switchboard .
#   docker run --init -p 127.0.0.1:8000:8000 -v "$PWD/config/overrides:/app/config/overrides:ro" \
#              -v "$PWD/data:/app/data" -v "$PWD/logs:/app/logs" switchboard
#
# Build arguments:
#   INSTALL_NODE=true   add Node.js and npm, for npx-based MCP servers (config/examples/*.json)
#   APP_UID / APP_GID   the user the app runs as (default 1000); match your host user to keep
#                       ./data and ./logs yours on the host (compose passes SWITCHBOARD_UID / _GID)
#   UV_VERSION          the uv release that installs the locked dependencies
#
# Users: the container starts as root only for its entrypoint (scripts/docker-entrypoint.sh),
# which gives /app/data and /app/logs to the app's user (Docker creates missing bind-mounted
# folders owned by root) and then runs the app as that user; the app never runs as root.
# Where the platform sets the user instead (Kubernetes: runAsUser: 1000, runAsNonRoot: true,
# and a volume writable for it, e.g. fsGroup: 1000), the entrypoint runs the app as is.
#
# The image binds 0.0.0.0 in `dev` auth mode, so every visitor is the one dev user and the
# app prints a warning. That is fine behind compose's 127.0.0.1 port on a laptop; for a real
# deployment set SWITCHBOARD_AUTH_MODE=proxy and SWITCHBOARD_PROXY_SECRET and put the app
# behind a reverse proxy that authenticates users (see README.md, "Deploying").

FROM python:3.11-slim

ARG INSTALL_NODE=false
# The base image's Debian release decides the Node.js version (18+ is enough for npx servers).
# hadolint ignore=DL3008
RUN if [ "$INSTALL_NODE" = "true" ]; then \
        apt-get update \
        && apt-get install -y --no-install-recommends nodejs npm \
        && rm -rf /var/lib/apt/lists/*; \
    fi

ARG UV_VERSION=0.13.9
RUN pip install --no-cache-dir "uv==${UV_VERSION}"

ARG APP_UID=1000
ARG APP_GID=1000
# An existing group with that id (say 20 for a macOS user) is reused.
RUN (getent group "$APP_GID" >/dev/null || groupadd --gid "$APP_GID" switchboard) \
    && useradd --uid "$APP_UID" --gid "$APP_GID" --create-home --shell /usr/sbin/nologin switchboard

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PYTHON_DOWNLOADS=never \
    UV_NO_CACHE=1

WORKDIR /app

# Dependencies first: this layer is rebuilt only when the lock changes. Only what serving
# needs, as ./scripts/serve installs it: no dependency group (tests, example servers).
COPY pyproject.toml uv.lock ./
RUN uv sync --frozen --no-default-groups --no-install-project

# Then the app itself (installed editable, so the project root stays /app and the
# relative `cwd` of the bundled servers in config/defaults/mcp.json resolves).
COPY README.md ./
COPY backend ./backend
COPY frontend ./frontend
COPY config/defaults ./config/defaults
COPY config/examples ./config/examples
COPY scripts ./scripts
RUN uv sync --frozen --no-default-groups \
    && python -m compileall -q backend scripts \
    && mkdir -p /app/data /app/logs /app/config/overrides \
    && chown "$APP_UID:$APP_GID" /app/data /app/logs \
    && chmod 0755 /app/scripts/docker-entrypoint.sh

# The code and the venv stay owned by root (read-only for the app); it writes only to
# data/ and logs/. No USER here: the entrypoint drops from root to the app's user after
# fixing those folders' ownership (see the top of this file).

ENV HOME=/home/switchboard \
    PATH="/app/.venv/bin:$PATH" \
    SWITCHBOARD_HOST=0.0.0.0 \
    SWITCHBOARD_PORT=8000 \
    SWITCHBOARD_DATA_DIR=/app/data \
    SWITCHBOARD_LOG_DIR=/app/logs \
    SWITCHBOARD_CONFIG_DIR=/app/config/overrides \
    LITELLM_LOCAL_MODEL_COST_MAP=True

EXPOSE 8000

# python:3.11-slim has no curl; /healthz answers as soon as the app serves. An app that
# cannot start exits non-zero after one line saying why, so `restart:` policies apply.
HEALTHCHECK --interval=30s --timeout=5s --start-period=40s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('SWITCHBOARD_PORT', '8000'), timeout=4)"]

ENTRYPOINT ["/app/scripts/docker-entrypoint.sh"]
CMD ["/app/.venv/bin/switchboard", "serve"]
