"""V2 parsing against results a real (in-memory) FastMCP server produces."""

import base64
import json

import pytest
from fastmcp import Client, FastMCP
from mcp_types import (
    BlobResourceContents,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from switchboard.tools import parse_result
from switchboard.tools.results import finish_text

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
B64 = base64.b64encode(PNG).decode()

server = FastMCP("results")


@server.tool
def v2_structured() -> dict:
    return {
        "results": {"n": 3},
        "artifacts": [{"name": "a.png", "b64": B64, "mime": "image/png"}],
        "display": {"open_canvas": True, "primary_file": "a.png"},
    }


@server.tool
def v2_as_text() -> list:
    return [
        TextContent(
            type="text",
            text=json.dumps(
                {"results": "fine", "artifacts": [{"name": "n.txt", "b64": base64.b64encode(b"hi").decode()}]}
            ),
        )
    ]


@server.tool
def plain() -> str:
    return "just text"


@server.tool
def blocks() -> list:
    return [
        TextContent(type="text", text="three files"),
        ImageContent(type="image", data=B64, mime_type="image/png"),
        EmbeddedResource(
            type="resource",
            resource=TextResourceContents(uri="file:///r/notes.md", mime_type="text/markdown", text="# hi"),
        ),
        EmbeddedResource(
            type="resource",
            resource=BlobResourceContents(
                uri="file:///r/data.bin",
                mime_type="application/octet-stream",
                blob=base64.b64encode(b"\x00\x01").decode(),
            ),
        ),
        ResourceLink(type="resource_link", name="later", uri="mem://later"),
    ]


@server.tool
def broken_artifacts() -> dict:
    return {
        "results": "x",
        "artifacts": [
            {"name": "bad", "b64": "@@@not base64"},
            "nope",
            {"name": "big", "b64": base64.b64encode(b"x" * 2000).decode()},
        ],
    }


@server.tool
def fails() -> str:
    raise ValueError("exploded")


async def run(name):
    async with Client(server) as client:
        return await client.call_tool_mcp(name, {})


async def test_v2_structured_content_becomes_results_artifacts_and_display():
    outcome = parse_result(await run("v2_structured"), max_artifact_bytes=10_000)
    finish_text(outcome)
    assert outcome.ok and outcome.results == {"n": 3}
    assert [(a.name, a.mime, a.data) for a in outcome.artifacts] == [("a.png", "image/png", PNG)]
    assert outcome.display == {"open_canvas": True, "primary_file": "a.png"}
    assert B64 not in outcome.text and '{"n": 3}' in outcome.text and "a.png" in outcome.text


async def test_v2_as_json_text_works_too():
    outcome = parse_result(await run("v2_as_text"), max_artifact_bytes=10_000)
    assert outcome.results == "fine"
    assert outcome.artifacts[0].data == b"hi" and outcome.artifacts[0].mime == "text/plain"


async def test_plain_text_stays_valid():
    outcome = parse_result(await run("plain"), max_artifact_bytes=10_000)
    assert outcome.ok and outcome.text == "just text" and outcome.artifacts == []


async def test_image_and_embedded_resources_become_artifacts():
    outcome = parse_result(await run("blocks"), max_artifact_bytes=10_000)
    names = [(a.name, a.mime) for a in outcome.artifacts]
    assert names == [
        ("image-2.png", "image/png"),
        ("notes.md", "text/markdown"),
        ("data.bin", "application/octet-stream"),
    ]
    assert "three files" in outcome.text and outcome.resource_links == [("later", "mem://later")]


async def test_bad_and_oversized_artifacts_are_dropped_with_a_note():
    outcome = parse_result(await run("broken_artifacts"), max_artifact_bytes=1000)
    finish_text(outcome)
    assert outcome.artifacts == []
    assert "not valid base64" in outcome.text
    joined = " ".join(outcome.notes)
    assert "not valid base64" in joined and "not an object" in joined and "over the 1,000-byte limit" in joined


async def test_tool_errors_are_not_ok():
    outcome = parse_result(await run("fails"), max_artifact_bytes=1000)
    assert not outcome.ok and "exploded" in outcome.text


@pytest.mark.parametrize("mime", ["image/png"])
def test_artifact_store_checks_declared_types(tmp_path, mime):
    from switchboard.files.artifacts import ArtifactStore

    store = ArtifactStore(tmp_path)
    assert store.put(owner="a", name="x.png", mime=mime, data=PNG).mime == "image/png"
    # Declared PNG, really HTML: never stored as something a browser renders as a page.
    assert (
        store.put(owner="a", name="x.png", mime=mime, data=b"<script>alert(1)</script>").mime
        == "application/octet-stream"
    )
    # Declared HTML, really a PNG: stored as PNG.
    assert store.put(owner="a", name="x.html", mime="text/html", data=PNG).mime == "image/png"
    # Names are never paths.
    stored = store.put(owner="a", name="../../etc/passwd", mime="text/plain", data=b"x")
    assert stored.name == "passwd"
    assert store.get(stored.id, owner="a")[1].parent == tmp_path


def test_retention_removes_old_files_only(tmp_path):
    import os
    import time

    from switchboard.files.artifacts import ArtifactStore

    store = ArtifactStore(tmp_path)
    old = store.put(owner="a", name="old.txt", mime="text/plain", data=b"old")
    new = store.put(owner="a", name="new.txt", mime="text/plain", data=b"new")
    meta = tmp_path / f"{old.id}.json"
    entry = json.loads(meta.read_text())
    entry["created"] = time.time() - 10 * 86400
    meta.write_text(json.dumps(entry))
    assert store.purge_older_than(86400) == 1
    assert not (tmp_path / f"{old.id}.bin").exists() and store.get(new.id, owner="a")
    assert os.listdir(tmp_path)


def test_stored_files_survive_a_restart(tmp_path):
    from switchboard.files.artifacts import ArtifactStore

    stored = ArtifactStore(tmp_path).put(owner="a", name="x.png", mime="image/png", data=PNG)
    again, path = ArtifactStore(tmp_path).get(stored.id, owner="a")  # a new process, the same data dir
    assert again == stored and path.read_bytes() == PNG
