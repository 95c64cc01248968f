"""deploy/nginx.conf, the scale setup's proxy, run by a real nginx: it finds the replicas through
the DNS server it is given and looks them up again, so a replica that restarts with a new address
is reached. Only the addresses are changed for the test (Docker's DNS and port 8000 exist only
inside compose); a DNS server on 127.0.0.1 stands in for Docker's."""

from __future__ import annotations

import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from switchboard.settings import PROJECT_ROOT
from tests.support.cluster import nginx_binary
from tests.support.dns import dns_server
from tests.support.harness import free_port, wait_for_port


@contextmanager
def replica(address: str, port: int, name: str) -> Iterator[None]:
    class Answer(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = name.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer((address, port), Answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()


def shipped_conf(folder: Path, *, dns_port: int, listen: int, upstream: int) -> Path:
    conf = (PROJECT_ROOT / "deploy" / "nginx.conf").read_text()
    for old, new in (
        ("resolver 127.0.0.11 valid=10s", f"resolver 127.0.0.1:{dns_port} valid=1s"),
        ("listen 8000;", f"listen 127.0.0.1:{listen};"),
        ("replica:8000", f"replica:{upstream}"),
    ):
        assert conf.count(old) == 1, f"deploy/nginx.conf has no single '{old}'"
        conf = conf.replace(old, new)
    path = folder / "nginx.conf"
    path.write_text(conf)
    return path


def ask(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return str(answer.read().decode())
    except OSError as exc:
        return f"failed: {exc}"


def test_the_proxy_finds_a_replica_again_after_it_restarts_with_a_new_address(tmp_path):
    nginx = nginx_binary()
    assert nginx, "nginx is not installed: `apt-get install -y nginx` (scripts/test does it as root)"
    upstream, listen = free_port(), free_port()
    with dns_server() as dns, replica("127.0.0.2", upstream, "first"):
        dns.answers["replica"] = ["127.0.0.2"]
        conf = shipped_conf(tmp_path, dns_port=dns.port, listen=listen, upstream=upstream)
        front = subprocess.Popen(
            [
                nginx,
                "-c",
                str(conf),
                "-p",
                str(tmp_path),
                "-g",
                f"daemon off; pid {tmp_path}/nginx.pid; error_log {tmp_path}/error.log;",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            wait_for_port(listen, front, "nginx")
            assert ask(f"http://127.0.0.1:{listen}/") == "first"
            # The replica's container restarts with another address; Docker's DNS says so.
            dns.answers["replica"] = ["127.0.0.3"]
            with replica("127.0.0.3", upstream, "second"):
                deadline = time.monotonic() + 30
                answers = [ask(f"http://127.0.0.1:{listen}/")]
                while answers[-1] != "second" and time.monotonic() < deadline:
                    time.sleep(0.2)
                    answers.append(ask(f"http://127.0.0.1:{listen}/"))
                assert answers[-1] == "second", answers[-5:]
        finally:
            front.terminate()
            front.wait(10)
    assert dns.queries.count("replica") >= 2, dns.queries
