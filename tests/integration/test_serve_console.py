"""The console of `switchboard serve` says when each server is ready or failed, and when all have settled."""

from __future__ import annotations

from tests.support.harness import toolbox_entry, write_config
from tests.support.serve import ServeConsole


def test_serve_prints_one_line_per_server_and_a_summary(tmp_path):
    write_config(
        tmp_path / "defaults",
        servers={
            "toolbox": toolbox_entry(),
            "broken": {"command": "python", "args": ["-c", "import sys; sys.exit('cannot start: no licence')"]},
        },
    )
    (tmp_path / "overrides").mkdir()
    (tmp_path / "overrides" / "groups.yml").write_text("users: [\n")
    console = ServeConsole(tmp_path)
    try:
        seen = console.until_settled()
    finally:
        console.proc.terminate()
        console.proc.wait(30)
    assert any(line.startswith("CONFIG ERROR:") and "groups.yml" in line and "line 2" in line for line in seen), seen
    ready = [line for line in seen if line.startswith("server toolbox ready in ")]
    assert ready and ready[0].endswith(" tools)"), seen
    assert any(line.startswith("server broken FAILED: ") for line in seen), seen
    assert seen[-1] == "servers: 1 of 2 ready, 1 failed (broken)", seen
