"""Layer boundaries (STYLE.md): only web/ imports fastapi/starlette, only
llm/ imports litellm, only tools/ imports fastmcp/mcp; lower layers never
import higher ones."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "backend" / "switchboard"

OWNERS = {
    "fastapi": {"web"},
    "starlette": {"web"},
    "litellm": {"llm"},
    "fastmcp": {"tools"},
    "mcp": {"tools"},
    "mcp_types": {"tools"},
    "sqlalchemy": {"store"},
    "alembic": {"store"},
    # the OpenAI SDK is the model client's; outbound HTTP belongs to the model client, the MCP
    # transports, the group service (identity/users.py) and the terminal client
    "openai": {"llm"},
    "httpx": {"llm", "tools", "identity", "cli", "policy"},  # policy: a hook's HTTP policy service
    "httpx_sse": {"cli"},
    "sse_starlette": {"web"},
    "opentelemetry": {"telemetry"},
    "prometheus_client": {"telemetry"},
    "obstore": {"files"},
    "cedarpy": {"policy"},
}
# What each layer may not import (data flows web -> chat -> (llm, tools)).
FORBIDDEN = {
    "tools": {"chat", "web", "llm"},
    "llm": {"chat", "web", "tools"},
    "chat": {"web"},
    "config": {"chat", "web", "tools", "llm"},
    "store": {"chat", "web", "tools", "llm"},
    "history": {"chat", "web", "tools", "llm", "store"},
    "identity": {"chat", "web", "tools", "llm", "store"},
    "files": {"chat", "web", "tools", "llm"},  # the turn stores files; files know nothing of turns
    "cli": {"web", "tools", "llm", "store"},  # a client of the HTTP API: its event models only
    "policy": {"chat", "web", "tools", "llm", "store"},  # hooks know events, not the core that runs them
}


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
        owners = OWNERS.get(top)
        assert owners is None or layer in owners, (
            f"{path.relative_to(PACKAGE)} imports {name} (belongs in {sorted(owners)})"
        )


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


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["switchboard", *parts])


def _import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports (at any level, type-checking imports too)."""
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in paths}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = (
                    (node.module or "")
                    if not node.level
                    else ".".join(
                        package.split(".")[: len(package.split(".")) - node.level + 1]
                        + ([node.module] if node.module else [])
                    )
                )
                targets = [f"{base}.{a.name}" for a in node.names] + [base]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for target in targets:
                if target in paths and target != name:
                    graph[name].add(target)
                    break
    return graph


def test_no_import_cycles_between_modules():
    """Packages' __init__ files re-export their modules, so edges into an __init__ are left out:
    a cycle here is two modules that need each other."""
    graph = _import_graph()
    inits = {_module_name(p) for p in PACKAGE.rglob("__init__.py")}
    graph = {m: {t for t in targets if t not in inits} for m, targets in graph.items() if m not in inits}
    seen: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles = []

    def visit(module: str, trail: list[str]) -> None:
        seen[module] = 1
        for target in sorted(graph.get(module, ())):
            if seen.get(target) == 1:
                cycles.append([*trail[trail.index(target) :], target] if target in trail else [module, target])
            elif target not in seen:
                visit(target, [*trail, target])
        seen[module] = 2

    for module in sorted(graph):
        if module not in seen:
            visit(module, [module])
    assert not cycles, " ; ".join(" -> ".join(c) for c in cycles)
