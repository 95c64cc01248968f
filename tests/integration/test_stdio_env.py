"""A stdio server gets the host's certificate-authority variables (a company CA that inspects
TLS), so `uvx`, pip, requests and Node.js in it trust what the host trusts; the app's other
variables still never reach it."""

from __future__ import annotations

from switchboard.config.loader import McpConfig
from switchboard.config.models import ServerConfig
from switchboard.tools import ServerPool
from tests.support.harness import TOOLBOX
from tests.support.sinks import Sink

CA = {
    "SSL_CERT_FILE": "/etc/company/ca-bundle.pem",
    "SSL_CERT_DIR": "/etc/company/certs",
    "REQUESTS_CA_BUNDLE": "/etc/company/requests.pem",
    "CURL_CA_BUNDLE": "/etc/company/curl.pem",
    "NODE_EXTRA_CA_CERTS": "/etc/company/node.pem",
}


async def test_a_stdio_server_gets_the_hosts_ca_variables_and_no_secret(tmp_path, monkeypatch):
    for name, value in CA.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SWITCHBOARD_TEST_APP_SECRET", "must-not-leak")
    servers = {
        "local": ServerConfig(command="python", args=[str(TOOLBOX)]),
        "own": ServerConfig(command="python", args=[str(TOOLBOX)], env={"SSL_CERT_FILE": "/srv/own.pem"}),
    }
    pool = ServerPool(McpConfig(servers=servers), project_root=tmp_path, log_dir=tmp_path / "logs", init_timeout_s=60)
    pool.start()
    try:
        await pool.wait_settled(90)
        tools = {t.qualified_name: t for t in pool.registry.all()}
        for name, value in CA.items():
            assert (await pool.call(tools["local_env_probe"], {"name": name}, Sink())).text == f"{name}={value}"
        secret = await pool.call(tools["local_env_probe"], {"name": "SWITCHBOARD_TEST_APP_SECRET"}, Sink())
        assert secret.text.endswith("<unset>")
        # A server's own `env` still wins.
        own = await pool.call(tools["own_env_probe"], {"name": "SSL_CERT_FILE"}, Sink())
        assert own.text == "SSL_CERT_FILE=/srv/own.pem"
    finally:
        await pool.stop()
