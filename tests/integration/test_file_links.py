"""The host tells its stdio servers where its signed file links live
(SWITCHBOARD_FILES_ORIGIN = the app's public base URL), and the bundled servers
fetch nothing else: no internal services, no redirects (issue 12, SSRF)."""

from __future__ import annotations

from switchboard.services import build_services
from tests.support.harness import make_settings, toolbox_entry, write_config
from tests.support.sinks import Sink

PUBLIC_URL = "https://chat.example.com/switchboard"
SIGNED = "/api/files/abcdefghijklmnop/content?u=alice%40example.com&e=9999999999&s=" + "ab" * 32


async def test_stdio_servers_learn_the_hosts_file_origin_and_refuse_others(tmp_path):
    write_config(
        tmp_path / "defaults",
        servers={
            "toolbox": toolbox_entry(approval="never"),
            "pdfbasic": {"command": "python", "args": ["main.py"], "cwd": "backend/mcp/pdfbasic"},
        },
    )
    services = build_services(make_settings(tmp_path, public_url=PUBLIC_URL + "/"), environ={})
    pool = services.pool
    pool.start()
    try:
        await pool.wait_settled(60)
        tools = {t.qualified_name: t for t in pool.registry.all()}
        probe = await pool.call(tools["toolbox_env_probe"], {"name": "SWITCHBOARD_FILES_ORIGIN"}, Sink())
        assert probe.text == f"SWITCHBOARD_FILES_ORIGIN={PUBLIC_URL}"

        # A signed-looking link on localhost is not the host's origin here: refused, never fetched.
        analyze = tools["pdfbasic_analyze_pdf"]
        local = await pool.call(analyze, {"file_url": "http://127.0.0.1:9" + SIGNED}, Sink())
        assert not local.ok and "it is not on the host's own origin" in local.text
        internal = await pool.call(analyze, {"file_url": "http://169.254.169.254/latest/meta-data/"}, Sink())
        assert not internal.ok and "refused the file link" in internal.text
    finally:
        await pool.stop()
