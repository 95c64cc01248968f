import os
import signal
import sys
from pathlib import Path

import pytest

from switchboard.environment import set_defaults

set_defaults()
# Tests must not pick up the developer's own model keys or .env.
for _key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
    os.environ.pop(_key, None)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # `tests.support...`

# A run started in the background by a shell without job control (`cmd &` in a script) inherits
# SIGINT ignored, and so would every process the tests start: their Ctrl-C tests could not
# interrupt them. A handled signal is reset to the default in a started program, which Python
# then turns into KeyboardInterrupt as usual.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

_FAST_DIRS = ("unit",)


def pytest_collection_modifyitems(config, items):
    """Speed markers: everything outside tests/unit is `slow` (real processes, servers, Chromium),
    and so is a unit test on PostgreSQL (it needs the throw-away cluster). `scripts/test --fast`
    runs the rest: the unit tests, in well under a minute."""
    root = Path(__file__).resolve().parent
    for item in items:
        parts = Path(str(item.fspath)).resolve().relative_to(root).parts
        on_postgres = "postgres" in getattr(getattr(item, "callspec", None), "params", {}).values()
        if parts[0] not in _FAST_DIRS or on_postgres or "postgres_url" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def postgres_cluster():
    """A real PostgreSQL server for the session (tests/support/postgres.py), started on first use.
    Missing binaries skip the test locally and fail it under CI=true."""
    from tests.support.postgres import PostgresCluster, find_bin_dir

    bin_dir = find_bin_dir()
    if bin_dir is None:
        message = (
            "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): "
            "run scripts/test as root, or `sudo apt-get install -y postgresql`"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    cluster = PostgresCluster(bin_dir)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def postgres_url(postgres_cluster):
    """The SQLAlchemy URL of a fresh, empty database on the session's PostgreSQL server."""
    return postgres_cluster.create_database()
