"""Start-up order: the model library (seconds of CPU to import) loads only once the MCP
servers have settled, so that it does not compete with their start."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

from starlette.testclient import TestClient

from switchboard.services import build_services
from switchboard.web.app import create_app
from tests.support.harness import TOOLBOX, make_settings, write_config

# The toolbox, after a second's pause: a server that takes a while to start.
SLOW_TOOLBOX = {
    "command": "python",
    "args": [
        "-c",
        f"import runpy, sys, time; time.sleep(1.0); sys.argv = [{str(TOOLBOX)!r}]; "
        f"runpy.run_path({str(TOOLBOX)!r}, run_name='__main__')",
    ],
}


class WarmUpWatch:
    """Stands for the model library: notes which server statuses it saw when asked to load."""

    def __init__(self) -> None:
        self.services: Any = None
        self.statuses_at_warm_up: list[str] | None = None

    def warm_up(self) -> None:
        self.statuses_at_warm_up = [s.status for s in self.services.pool.statuses()]

    async def stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:  # pragma: no cover - no turn here
        raise AssertionError("no model call in this test")
        yield


def test_the_model_library_loads_after_the_servers_have_settled(tmp_path):
    write_config(tmp_path / "defaults", servers={"slow": SLOW_TOOLBOX})
    settings = make_settings(tmp_path)
    watch = WarmUpWatch()
    services = watch.services = build_services(settings, llm=watch)  # type: ignore[arg-type]
    with TestClient(create_app(settings, services=services)) as client:
        assert client.get("/readyz").status_code == 503  # the slow server is still starting
        assert watch.statuses_at_warm_up is None
        deadline = time.monotonic() + 30
        while watch.statuses_at_warm_up is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert watch.statuses_at_warm_up == ["ready"]
        assert client.get("/readyz").status_code == 200
