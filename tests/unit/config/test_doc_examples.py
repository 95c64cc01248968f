"""Every `mcp.json` example in the docs (README.md, docs/, config/**/README.md) goes through the
real loader as an override file, so that what the docs tell people to write is what the loader
takes. An example is a fenced JSON block or an inline `{...}`; it is taken for:

- an override file when it is a whole JSON object with `servers`/`mcpServers`, or whose values
  are objects with server fields (a map of servers: it must have the wrapper to load);
- a server entry when it has server fields itself (`{"command": ...}`), or when it is a fragment
  (`"time": {...}`) meant to be pasted under `"servers"`.
Other JSON (API bodies, wire messages) is left alone."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from switchboard.config.loader import load_mcp_config
from switchboard.config.models import ServerConfig
from switchboard.settings import PROJECT_ROOT

SERVER_FIELDS = set(ServerConfig.model_fields) - {"description"}
DOCS = sorted(
    [PROJECT_ROOT / "README.md", *(PROJECT_ROOT / "docs").rglob("*.md"), *(PROJECT_ROOT / "config").rglob("README.md")]
)
FENCE = re.compile(r"^([ \t]*)```json[ \t]*\n(.*?)^[ \t]*```", re.M | re.S)
INLINE = re.compile(r"`(\{[^`\n]*\})`")


class EveryVariable(dict[str, str]):
    """Any `${VAR}` an example names counts as set (the reader's environment has it)."""

    def __contains__(self, key: object) -> bool:
        return True

    def __getitem__(self, key: str) -> str:
        return f"/set/{key}"


def is_server(value: Any) -> bool:
    return isinstance(value, dict) and bool(SERVER_FIELDS & set(value))


def as_override(snippet: str) -> dict[str, Any] | None:
    """The mcp.json override file the snippet stands for, or None when it is not about servers."""
    try:
        whole = json.loads(snippet)
    except json.JSONDecodeError:
        try:
            fragment = json.loads("{" + snippet + "}")
        except json.JSONDecodeError:
            return None
        return {"servers": fragment} if any(is_server(v) for v in fragment.values()) else None
    if not isinstance(whole, dict):
        return None
    if {"servers", "mcpServers"} & set(whole) or any(is_server(v) for v in whole.values()):
        return whole
    if is_server(whole) and ({"command", "url"} & set(whole) or whole.get("enabled") is False):
        return {"servers": {"example": whole}}
    return None


def examples() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        snippets = [textwrap.dedent(m.group(2)) for m in FENCE.finditer(text)] + INLINE.findall(text)
        for snippet in snippets:
            override = as_override(snippet)
            if override is not None:
                line = text[: text.index(snippet.strip().splitlines()[0].strip())].count("\n") + 1
                found.append((f"{path.relative_to(PROJECT_ROOT)}:{line}", override))
    return found


EXAMPLES = examples()


def test_the_docs_examples_are_found():
    places = {where.split(":")[0] for where, _ in EXAMPLES}
    assert {"README.md", "config/overrides/README.md", "config/examples/README.md"} <= places, places
    assert len(EXAMPLES) >= 5, EXAMPLES


@pytest.mark.parametrize(("where", "override"), EXAMPLES, ids=[where for where, _ in EXAMPLES])
def test_every_mcp_json_example_in_the_docs_loads(where: str, override: dict[str, Any], tmp_path: Path):
    (tmp_path / "mcp.json").write_text(json.dumps(override))
    loaded = load_mcp_config(PROJECT_ROOT / "config" / "defaults", tmp_path, EveryVariable())
    problems = [str(error) for error in [*loaded.file_errors, *loaded.errors.values()]]
    assert not problems, f"{where}: {json.dumps(override)} is refused: {problems}"
