"""Uploads and artifacts on an S3-compatible store (a real moto server): two app processes on one
bucket share files, signed links reach an MCP server, large files stream in parts, and delete and
retention remove the objects."""

from __future__ import annotations

import asyncio
import json
import os
import time

import httpx
import obstore
import pytest
from obstore.store import S3Store

from switchboard.services import build_services
from switchboard.web.app import create_app
from tests.integration.test_files import turn, upload
from tests.support.harness import double_model, free_port, make_settings, serve_app, toolbox_entry, write_config
from tests.support.llm_double import TextReply, ToolCall, ToolCallReply
from tests.support.s3 import AWS_ENV, make_bucket, s3_server

SECRET = "s3-proxy-secret"
ALICE = {"x-user-email": "alice@example.com", "x-proxy-secret": SECRET}
BOB = {"x-user-email": "bob@example.com", "x-proxy-secret": SECRET}


@pytest.fixture(scope="module")
def bucket():
    with s3_server() as endpoint:
        saved = {k: os.environ.get(k) for k in [*AWS_ENV, "AWS_ENDPOINT_URL"]}
        os.environ.update({**AWS_ENV, "AWS_ENDPOINT_URL": endpoint})
        make_bucket(endpoint, "sb-files")
        try:
            yield S3Store("sb-files")
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


@pytest.fixture(scope="module")
def apps(tmp_path_factory, llm, bucket):
    """Two app processes' worth of app (each its own data dir and server), one bucket."""
    tmp = tmp_path_factory.mktemp("s3")
    write_config(
        tmp / "defaults",
        servers={"toolbox": toolbox_entry(approval="never")},
        models=[double_model(llm)],
        default_model="double",
    )
    bases = []
    from contextlib import ExitStack

    with ExitStack() as stack:
        for n in range(2):
            port = free_port()
            settings = make_settings(
                tmp,
                data_dir=tmp / f"data{n}",
                port=port,
                auth_mode="proxy",
                proxy_secret=SECRET,
                files_url="s3://sb-files/site-a",
                max_upload_bytes=40_000_000,
                max_upload_bytes_per_user=100_000_000,
            )
            services = build_services(settings, environ={"DOUBLE_KEY": "k"})
            base = stack.enter_context(serve_app(create_app(settings, services=services), port))
            deadline = time.monotonic() + 60
            while httpx.get(f"{base}/readyz").status_code != 200 and time.monotonic() < deadline:
                time.sleep(0.2)
            bases.append((base, services))
        yield bases


def _keys(bucket) -> set[str]:
    return {meta["path"] for batch in obstore.list(bucket) for meta in batch}


def test_an_upload_through_one_process_is_read_through_another_and_lives_in_the_bucket(apps, bucket):
    (one, _), (two, _) = apps
    body = upload(one, ALICE, "notes.txt", b"shared notes", "text/plain").json()
    assert f"site-a/{body['id']}.bin" in _keys(bucket) and f"site-a/{body['id']}.json" in _keys(bucket)
    assert httpx.get(f"{two}/api/artifacts/{body['id']}", headers=ALICE).content == b"shared notes"
    assert httpx.get(f"{two}/api/artifacts/{body['id']}", headers=BOB).status_code == 404


def test_a_large_upload_goes_in_parts_and_comes_back_as_a_stream(apps):
    (one, _), (two, _) = apps
    data = os.urandom(1024) * (20 * 1024)  # 20 MiB
    body = upload(one, ALICE, "big.bin", data).json()
    assert body["size"] == len(data)
    with httpx.stream("GET", f"{two}/api/artifacts/{body['id']}?download=true", headers=ALICE) as response:
        assert response.status_code == 200
        assert response.headers["content-length"] == str(len(data))
        chunks = list(response.iter_raw())
    assert b"".join(chunks) == data


def test_signed_links_reach_a_tool_and_artifacts_are_stored_in_the_bucket(apps, llm, bucket):
    (one, services), (two, _) = apps
    file_id = upload(one, ALICE, "x.txt", b"abcdef", "text/plain").json()["id"]
    llm.enqueue(ToolCallReply([ToolCall("toolbox_fetch", json.dumps({"file_url": "x.txt"}))]), TextReply("ok"))
    events = asyncio.run(turn(one, ALICE, {"content": "fetch it", "files": [file_id]}))
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["ok"] and result["content"].strip() == "6 bytes", result
    llm.enqueue(ToolCallReply([ToolCall("toolbox_make_report", "{}")]), TextReply("done"))
    events = asyncio.run(turn(one, ALICE, {"content": "report"}))
    artifacts = next(e for e in events if e["type"] == "tool_result")["artifacts"]
    for artifact in artifacts:
        assert f"site-a/{artifact['id']}.bin" in _keys(bucket)
    html = next(a for a in artifacts if a["name"] == "report.html")
    assert b"<h1>Report</h1>" in httpx.get(two + html["url"], headers=ALICE).content  # themed, read from the bucket


def test_deleting_a_conversation_and_retention_remove_the_objects(apps, llm, bucket):
    (one, services), _ = apps
    llm.enqueue(ToolCallReply([ToolCall("toolbox_make_report", "{}")]), TextReply("done"))
    events = asyncio.run(turn(one, ALICE, {"content": "report"}))
    conversation = next(e for e in events if e["type"] == "message_done")["conversation_id"]
    ids = [a["id"] for a in next(e for e in events if e["type"] == "tool_result")["artifacts"]]
    assert httpx.delete(f"{one}/api/conversations/{conversation}", headers=ALICE).status_code == 204
    assert not {f"site-a/{i}.bin" for i in ids} & _keys(bucket)
    kept = upload(one, ALICE, "old.txt", b"old", "text/plain").json()["id"]
    assert services.artifacts.purge_older_than(-1) >= 1  # everything is "older" than the future
    assert f"site-a/{kept}.bin" not in _keys(bucket)
