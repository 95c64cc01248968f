"""The container entrypoint: started as root, it hands data/ and logs/ (bind mounts Docker
created owned by root) to the app's user and runs the app as that user."""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from switchboard.settings import PROJECT_ROOT

ENTRYPOINT = PROJECT_ROOT / "scripts" / "docker-entrypoint.sh"

pytestmark = pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0, reason="needs root, as a container starts")


@pytest.fixture
def open_tmp() -> Iterator[Path]:
    """A temp folder other users can traverse (pytest's own is private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="sb-entrypoint-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


def _nobody() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no 'nobody' user on this machine")


@pytest.mark.parametrize("drop", ["setpriv", "python"])
def test_root_owned_folders_become_the_app_users_and_the_app_runs_as_that_user(open_tmp, drop):
    user = _nobody()
    tmp_path = open_tmp
    data, logs = tmp_path / "data", tmp_path / "logs"
    (data / "files").mkdir(parents=True)
    (data / "files" / "old.bin").write_bytes(b"x")
    logs.mkdir()
    for path in (data, data / "files", data / "files" / "old.bin", logs):
        os.chown(path, 0, 0)
    data.chmod(0o755)  # as Docker makes a missing bind-mounted folder
    env = {
        "PATH": os.environ["PATH"],
        "SWITCHBOARD_APP_USER": "nobody",
        "SWITCHBOARD_DATA_DIR": str(data),
        "SWITCHBOARD_LOG_DIR": str(logs),
    }
    if drop == "python":  # a base image without util-linux's setpriv
        tools = tmp_path / "bin"
        tools.mkdir()
        for tool in ("sh", "id", "find", "chown", "chmod", "mkdir", "python3", "touch"):
            os.symlink(shutil.which(tool), tools / tool)
        env["PATH"] = str(tools)
    done = subprocess.run(
        [
            str(ENTRYPOINT),
            "sh",
            "-c",
            'id -u; id -G; touch "$SWITCHBOARD_DATA_DIR/new" "$SWITCHBOARD_LOG_DIR/app.jsonl"',
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    uid, groups = done.stdout.split("\n")[:2]
    assert int(uid) == user.pw_uid and groups.split() == [str(user.pw_gid)], "no root groups kept"
    for path in (data, data / "files" / "old.bin", data / "new", logs / "app.jsonl"):
        assert path.stat().st_uid == user.pw_uid, path
    assert stat.S_IMODE(data.stat().st_mode) == 0o700, "the data dir is private to the app's user"


def test_started_as_another_user_it_runs_the_command_as_is(tmp_path):
    user = _nobody()
    done = subprocess.run(
        ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups", str(ENTRYPOINT), "id", "-u"],
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": os.environ["PATH"], "SWITCHBOARD_DATA_DIR": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == user.pw_uid


def test_started_as_the_data_dirs_owner_it_makes_the_data_dir_private(open_tmp):
    user = _nobody()
    data = open_tmp / "data"
    data.mkdir(mode=0o755)
    os.chown(data, user.pw_uid, user.pw_gid)
    done = subprocess.run(
        ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups", str(ENTRYPOINT), "true"],
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": os.environ["PATH"], "SWITCHBOARD_DATA_DIR": str(data)},
    )
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
