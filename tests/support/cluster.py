"""Several `switchboard serve` processes on one throw-away PostgreSQL and one data dir, behind a
real nginx doing round robin (no stickiness): the shape of a deployment with replicas, on
127.0.0.1, started and stopped by the test."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.harness import free_port, wait_for_port, wait_ready

__all__ = ["Cluster", "nginx_binary", "running_cluster"]

_NGINX_CONF = """
{user}
worker_processes 1;
error_log {dir}/error.log warn;
pid {dir}/nginx.pid;
worker_rlimit_nofile 16384;
events {{ worker_connections 8192; }}  # a websocket holds two: 1,000 sessions need 2,000
http {{
  log_format upstreamlog '$request_method $uri $status $upstream_addr';
  access_log {dir}/access.log upstreamlog;
  client_body_temp_path {dir}/body; proxy_temp_path {dir}/proxy;
  fastcgi_temp_path {dir}/fastcgi; uwsgi_temp_path {dir}/uwsgi; scgi_temp_path {dir}/scgi;
  map $http_upgrade $connection_upgrade {{ default upgrade; "" close; }}
  upstream switchboard {{ {servers} }}
  server {{
    listen 127.0.0.1:{port};
    client_max_body_size 60m;
    location / {{
      proxy_pass http://switchboard;
      proxy_http_version 1.1;
      proxy_set_header Host $http_host;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
      proxy_buffering off;
      proxy_read_timeout 300s;
    }}
  }}
}}
"""


def nginx_binary() -> str | None:
    return shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if Path(p).exists()), None)


@dataclass
class Cluster:
    folder: Path
    env: dict[str, str]
    ports: list[int] = field(default_factory=list)
    procs: list[subprocess.Popen[bytes] | None] = field(default_factory=list)
    nginx_port: int = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.nginx_port}"

    def start_app(self, index: int) -> None:
        log = (self.folder / f"app{index}.log").open("ab")
        proc = subprocess.Popen(
            [sys.executable, "-m", "switchboard", "serve", "--port", str(self.ports[index])],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self.procs[index] = proc
        wait_for_port(self.ports[index], proc, f"app {index}", timeout_s=90)
        wait_ready(
            f"http://127.0.0.1:{self.ports[index]}", 120, lambda: (self.folder / f"app{index}.log").read_text()[-3000:]
        )

    def stop_app(self, index: int, *, kill: bool = False) -> None:
        proc = self.procs[index]
        if proc is None:
            return
        if kill:
            proc.kill()
        else:
            proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        self.procs[index] = None

    def upstreams(self) -> list[str]:
        """`host:port` of the app process that answered each request nginx has passed on, in order."""
        lines = (self.folder / "nginx" / "access.log").read_text().splitlines()
        return [line.rsplit(" ", 1)[-1] for line in lines]


@contextmanager
def running_cluster(
    folder: Path, database_url: str, replicas: int = 3, extra_env: dict[str, str] | None = None
) -> Iterator[Cluster]:
    """`replicas` app processes (config in `folder/defaults`, written by the caller) and nginx."""
    nginx = nginx_binary()
    assert nginx, "nginx is not installed: `apt-get install -y nginx` (scripts/test does it as root)"
    nginx_port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SWITCHBOARD_", "OTEL_", "PROMETHEUS_"))}
    env.update(
        {
            "SWITCHBOARD_DEFAULTS_DIR": str(folder / "defaults"),
            "SWITCHBOARD_CONFIG_DIR": str(folder / "overrides"),
            "SWITCHBOARD_DATA_DIR": str(folder / "data"),
            "SWITCHBOARD_LOG_DIR": str(folder / "logs"),
            "SWITCHBOARD_DATABASE_URL": database_url,
            "SWITCHBOARD_SECRET_KEY": "cluster-test-secret-key-0123456789",
            "SWITCHBOARD_PUBLIC_URL": f"http://127.0.0.1:{nginx_port}",
            **(extra_env or {}),
        }
    )
    (folder / "overrides").mkdir(exist_ok=True)
    cluster = Cluster(folder, env, [free_port() for _ in range(replicas)], [None] * replicas, nginx_port)
    conf_dir = folder / "nginx"
    conf_dir.mkdir()
    servers = " ".join(f"server 127.0.0.1:{port} max_fails=0;" for port in cluster.ports)
    (conf_dir / "nginx.conf").write_text(
        _NGINX_CONF.format(
            dir=conf_dir,
            servers=servers,
            port=nginx_port,
            user="user root;" if os.geteuid() == 0 else "",  # its workers write temp files in this root-only folder
        )
    )
    front: subprocess.Popen[bytes] | None = None
    try:
        for index in range(replicas):
            cluster.start_app(index)
        front = subprocess.Popen(
            [nginx, "-c", str(conf_dir / "nginx.conf"), "-p", str(conf_dir), "-g", "daemon off;"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        wait_for_port(nginx_port, front, "nginx")
        yield cluster
    finally:
        if front is not None:
            front.terminate()
            front.wait(10)
        for index in range(replicas):
            cluster.stop_app(index)
