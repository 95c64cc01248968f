"""Services are built in order (services.py): each part gets what it needs through its constructor,
and nothing is wired into a part after it is built. What changes while the host runs changes
inside a part, through its methods (lifecycle.py). And no package writes the process environment
when it is imported (switchboard/environment.py sets the defaults, called by the entry points)."""

from __future__ import annotations

import ast
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "backend" / "switchboard"
BUILDERS = ("services.py", "lifecycle.py")


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return [t for target in node.targets for t in _flat(target)]
    if isinstance(node, ast.AugAssign | ast.AnnAssign):
        return _flat(node.target)
    return []


def _flat(target: ast.expr) -> list[ast.expr]:
    if isinstance(target, ast.Tuple | ast.List):
        return [t for element in target.elts for t in _flat(element)]
    return [target]


def _root(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _wired_later(path: Path) -> list[str]:
    """Assignments to an attribute of another object (`calls.tasks = ...`, `self.turns.relay = ...`):
    a part's own attributes (`self.x = ...`) are its state, anything else is wiring after the fact."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        for target in _targets(node):
            if not isinstance(target, ast.Attribute):
                continue
            own = isinstance(target.value, ast.Name) and target.value.id == "self"
            if not own:
                found.append(f"{path.name}:{node.lineno}: {ast.unparse(target)} = ...")
    return found


def test_the_builders_wire_no_part_after_it_is_built():
    assert [line for name in BUILDERS for line in _wired_later(PACKAGE / name)] == []


def test_no_module_assigns_into_the_services():
    found = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            for target in _targets(node):
                if isinstance(target, ast.Attribute) and _root(target) == "services":
                    found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {ast.unparse(target)} = ...")
    assert found == []


def test_the_built_services_are_frozen(tmp_path):
    from switchboard.services import build_services
    from switchboard.settings import Settings

    settings = Settings(
        _env_file=None, data_dir=tmp_path / "data", log_dir=tmp_path / "logs", config_dir=tmp_path / "overrides"
    )
    services = build_services(settings, environ={})
    with pytest.raises(FrozenInstanceError):
        services.pool = services.pool  # type: ignore[misc]
    # The parts were built with one another: the hub, the task board and the pool with one relay.
    assert services.turns.relay is services.life.parts.relay
    assert services.turns.task_questions is services.tasks.board


def _writes_environment(node: ast.AST) -> bool:
    """`os.environ[...] = `, `os.environ.setdefault/update/pop(...)`, `os.putenv(...)`."""
    for target in _targets(node):
        if isinstance(target, ast.Subscript) and ast.unparse(target.value) == "os.environ":
            return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        called = ast.unparse(node.func)
        return called in ("os.putenv", "os.environ.update", "os.environ.pop", "os.environ.setdefault")
    return False


def _at_import(tree: ast.Module) -> list[ast.AST]:
    """The statements that run when the module is imported (not function bodies)."""
    pending: list[ast.AST] = list(tree.body)
    ran = []
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        ran.append(node)
        pending.extend(ast.iter_child_nodes(node))
    return ran


def test_no_module_writes_the_environment_when_it_is_imported():
    found = [
        f"{path.relative_to(PACKAGE)}:{getattr(node, 'lineno', '?')}"
        for path in _modules()
        for node in _at_import(ast.parse(path.read_text()))
        if _writes_environment(node)
    ]
    assert found == []
