"""A real S3-compatible endpoint for tests: moto in server mode, on 127.0.0.1, stopped with the test."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.support.harness import free_port, wait_for_port

AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "test-key",
    "AWS_SECRET_ACCESS_KEY": "test-secret",
    "AWS_REGION": "us-east-1",
    "AWS_ALLOW_HTTP": "true",
}


@contextmanager
def s3_server() -> Iterator[str]:
    """moto's S3 server; yields its endpoint URL."""
    binary = shutil.which("moto_server", path=str(Path(sys.executable).parent)) or "moto_server"
    port = free_port()
    proc = subprocess.Popen(
        [binary, "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for_port(port, proc, "moto_server")
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def make_bucket(endpoint: str, bucket: str) -> None:
    assert httpx.put(f"{endpoint}/{bucket}").status_code == 200
