"""Layer boundaries (STYLE.md): only web/ imports fastapi/starlette, only
llm/ imports litellm, only tools/ imports fastmcp/mcp; lower layers never
import higher ones."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "backend" / "switchboard"

OWNERS = {"fastapi": "web", "starlette": "web", "litellm": "llm", "fastmcp": "tools", "mcp": "tools", "mcp_types": "tools",
          "sqlalchemy": "store", "alembic": "store"}
# What each layer may not import (data flows web -> chat -> (llm, tools)).
FORBIDDEN = {"tools": {"chat", "web", "llm"}, "llm": {"chat", "web", "tools"}, "chat": {"web"}, "config": {"chat", "web", "tools", "llm"},
             "store": {"chat", "web", "tools", "llm"}, "history": {"chat", "web", "tools", "llm", "store"},
             "access": {"chat", "web", "tools", "llm", "store"}}


def modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        layer = rel.parts[0] if len(rel.parts) > 1 else rel.stem
        yield path, layer, ast.parse(path.read_text())


def imported(tree, path):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, 0
        elif isinstance(node, ast.ImportFrom):
            yield node.module or "", node.level


@pytest.mark.parametrize("path,layer,tree", list(modules()), ids=lambda v: str(v) if isinstance(v, str) else None)
def test_third_party_imports_stay_in_their_layer(path, layer, tree):
    for name, level in imported(tree, path):
        if level:
            continue
        top = name.split(".")[0]
        owner = OWNERS.get(top)
        assert owner is None or owner == layer, f"{path.relative_to(PACKAGE)} imports {name} (belongs in {owner}/)"


@pytest.mark.parametrize("path,layer,tree", list(modules()), ids=lambda v: str(v) if isinstance(v, str) else None)
def test_lower_layers_do_not_import_higher_ones(path, layer, tree):
    for name, level in imported(tree, path):
        if level == 0 and not name.startswith("switchboard"):
            continue
        target = name.removeprefix("switchboard.").split(".")[0] if level == 0 else None
        if level:
            rel = path.relative_to(PACKAGE)
            base = list(rel.parts[:-1])[: len(rel.parts) - level]
            target = (base + name.split("."))[0] if (base or name) else None
        assert target not in FORBIDDEN.get(layer, set()), f"{path.relative_to(PACKAGE)} imports {name}"
