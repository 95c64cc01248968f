"""docker-compose.yml and the Dockerfile: the Postgres profile really serves the app, and the
app's folders are fixed up by the entrypoint (no Docker daemon needed to check these)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

from switchboard.settings import PROJECT_ROOT

COMPOSE = PROJECT_ROOT / "docker-compose.yml"
POSTGRES_LINES = ("COMPOSE_PROFILES=postgres\n"
                  "SWITCHBOARD_DATABASE_URL=postgresql+asyncpg://switchboard:switchboard@postgres:5432/switchboard\n")


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


@pytest.mark.skipif(shutil.which("docker") is None, reason="no docker client")
def test_compose_resolves_the_postgres_setup_from_env(tmp_path):
    if subprocess.run(["docker", "compose", "version"], capture_output=True).returncode != 0:
        pytest.skip("no docker compose plugin")
    shutil.copy(COMPOSE, tmp_path / "docker-compose.yml")
    (tmp_path / "config" / "overrides").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COMPOSE_", "SWITCHBOARD_"))}
    plain = subprocess.run(["docker", "compose", "config", "--format", "json"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, check=True)  # fmt: skip
    assert "postgres" not in json.loads(plain.stdout)["services"]
    (tmp_path / ".env").write_text(POSTGRES_LINES)
    done = subprocess.run(["docker", "compose", "config", "--format", "json"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, check=True)  # fmt: skip
    services = json.loads(done.stdout)["services"]
    assert "postgres" in services
    assert services["app"]["environment"]["SWITCHBOARD_DATABASE_URL"].startswith("postgresql+asyncpg://")
    assert services["app"]["depends_on"]["postgres"]["condition"] == "service_healthy"


def test_the_scale_profile_puts_replicas_behind_nginx_with_shared_state_and_no_stickiness():
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    replica = services["replica"]
    assert replica["profiles"] == ["scale"] and "scale" in services["postgres"]["profiles"]
    env = dict(line.split("=", 1) for line in replica["environment"] if "=" in line)
    assert env["SWITCHBOARD_DATABASE_URL"].startswith("postgresql+asyncpg://") and "@postgres:5432/" in env["SWITCHBOARD_DATABASE_URL"]
    assert env["SWITCHBOARD_FILES_URL"].startswith("s3://") and env["AWS_ENDPOINT_URL"] == "http://minio:9000"
    assert env["SWITCHBOARD_SECRET_KEY"].startswith("${SWITCHBOARD_SECRET_KEY:?"), "replicas must share one key"
    assert "./deploy/nginx.conf:/etc/nginx/nginx.conf:ro" in services["nginx"]["volumes"]
    conf = (PROJECT_ROOT / "deploy" / "nginx.conf").read_text()
    assert "server replica:8000;" in conf
    assert "Upgrade $http_upgrade" in conf and "proxy_buffering off" in conf  # websockets, server-sent events
    assert not re.search(r"\b(ip_hash|sticky|hash \$)", conf), "no sticky routing: any replica serves any request"
