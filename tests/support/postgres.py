"""A throw-away PostgreSQL cluster for tests, from the system's binaries (Debian's postgresql
package: /usr/lib/postgresql/<version>/bin).

The server refuses to run as root, so under root every server command runs as the `postgres`
user (`runuser -u postgres --`) in a temp dir that user owns. It listens on 127.0.0.1 on a free
port with trust authentication (nothing else can reach it), its unix sockets in the temp dir,
fsync off unless asked to be durable; `stop()` shuts it down and removes the dir."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

__all__ = ["PostgresCluster", "find_bin_dir"]


def find_bin_dir() -> Path | None:
    """The newest installed PostgreSQL's bin dir, or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    return Path(found[-1]).parent if found else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PostgresCluster:
    def __init__(self, bin_dir: Path, *, durable: bool = False) -> None:
        """``durable=False`` (tests) turns fsync off; benchmarks keep the server's defaults."""
        self.bin_dir = bin_dir
        self.durable = durable
        self.port = 0
        self.dir: Path | None = None
        self._as_postgres = os.geteuid() == 0

    def _server_command(self, *args: str) -> list[str]:
        return ["runuser", "-u", "postgres", "--", *args] if self._as_postgres else list(args)

    def _run(self, *args: str, timeout: float = 60) -> None:
        done = subprocess.run(self._server_command(*args), capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            log = self.dir / "server.log" if self.dir else None
            tail = log.read_text(errors="replace")[-2000:] if log and log.exists() else ""
            raise RuntimeError(f"{' '.join(args[:1])} failed ({done.returncode}): {done.stderr or done.stdout}\n{tail}")

    def start(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="switchboard-pg-"))
        if self._as_postgres:
            user = pwd.getpwnam("postgres")
            os.chown(self.dir, user.pw_uid, user.pw_gid)
        data = self.dir / "data"
        self._run(
            str(self.bin_dir / "initdb"),
            "-D",
            str(data),
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        )
        self.port = _free_port()
        options = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1"
        if not self.durable:
            options += " -c fsync=off -c full_page_writes=off"
        self._run(
            str(self.bin_dir / "pg_ctl"),
            "-D",
            str(data),
            "-o",
            options,
            "-l",
            str(self.dir / "server.log"),
            "-w",
            "-t",
            "60",
            "start",
        )

    def url(self, database: str = "postgres", *, driver: str = "postgresql+asyncpg") -> str:
        return f"{driver}://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str | None = None) -> str:
        """A fresh, empty database; returns its SQLAlchemy URL."""
        name = name or "t_" + uuid.uuid4().hex[:16]
        self._run(str(self.bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name)
        return self.url(name)

    def stop(self) -> None:
        if self.dir is None:
            return
        try:
            self._run(str(self.bin_dir / "pg_ctl"), "-D", str(self.dir / "data"), "-m", "immediate", "-w", "stop")
        except (RuntimeError, subprocess.TimeoutExpired):
            pass  # not running (start failed); the dir goes anyway
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir = None
