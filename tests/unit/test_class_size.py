"""Small state: no class of the package keeps more than 15 mutable fields. A class that needs more
holds state of several owners; split it by owner (as the turn is: `chat/turn_state.py`).

Counted: the fields of a dataclass or pydantic model that is not frozen, and the attributes a plain
class assigns to `self` in `__init__`. Enums, named tuples, typed dicts and protocols hold no state.
"""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "backend" / "switchboard"
LIMIT = 15
# No class is allowed past the limit (`Services` is frozen, `Lifecycle` holds its parts in `LifeParts`).
ALLOWED: set[str] = set()
STATELESS_BASES = {"Enum", "IntEnum", "StrEnum", "NamedTuple", "TypedDict", "Protocol", "Exception"}


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _keyword_true(call: ast.expr, key: str) -> bool:
    if not isinstance(call, ast.Call):
        return False
    return any(k.arg == key and isinstance(k.value, ast.Constant) and k.value.value is True for k in call.keywords)


def _is_class_var(annotation: ast.expr) -> bool:
    return _name(annotation) == "ClassVar"


def _annotated_fields(cls: ast.ClassDef) -> list[str]:
    return [
        stmt.target.id
        for stmt in cls.body
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and not _is_class_var(stmt.annotation)
    ]


def _pydantic_frozen(cls: ast.ClassDef) -> bool:
    for stmt in cls.body:
        if isinstance(stmt, ast.Assign) and any(_name(t) == "model_config" for t in stmt.targets):
            return _keyword_true(stmt.value, "frozen")
    return False


def _init_attributes(cls: ast.ClassDef) -> set[str]:
    names: set[str] = set()
    for stmt in cls.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__":
            for node in ast.walk(stmt):
                targets: list[ast.expr] = []
                if isinstance(node, ast.Assign):
                    targets = list(node.targets)
                elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
                    targets = [node.target]
                for target in targets:
                    for part in ast.walk(target):
                        if (
                            isinstance(part, ast.Attribute)
                            and isinstance(part.value, ast.Name)
                            and part.value.id == "self"
                        ):
                            names.add(part.attr)
    return names


def mutable_fields(cls: ast.ClassDef) -> int:
    bases = {_name(base) for base in cls.bases}
    if bases & STATELESS_BASES or any(b.endswith(("Error", "Exception")) for b in bases):
        return 0
    dataclass = next((d for d in cls.decorator_list if _name(d) == "dataclass"), None)
    if dataclass is not None:
        return 0 if _keyword_true(dataclass, "frozen") else len(_annotated_fields(cls))
    if "BaseModel" in bases or "BaseSettings" in bases:
        return 0 if _pydantic_frozen(cls) else len(_annotated_fields(cls))
    return len(_init_attributes(cls))


def sizes() -> dict[str, int]:
    found: dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                found[f"{path.relative_to(PACKAGE).as_posix()}::{node.name}"] = mutable_fields(node)
    return found


def test_the_counter_sees_each_kind_of_class():
    source = """
from dataclasses import dataclass
@dataclass
class Loose:
    a: int
    b: int = 0
@dataclass(frozen=True)
class Fixed:
    a: int
class Plain:
    def __init__(self):
        self.a = 1
        self.b: int = 2
        self.a += 1
class Model(BaseModel):
    a: int
class FrozenModel(BaseModel):
    model_config = ConfigDict(frozen=True)
    a: int
"""
    classes = {node.name: node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ClassDef)}
    counted = {name: mutable_fields(node) for name, node in classes.items()}
    assert counted == {"Loose": 2, "Fixed": 0, "Plain": 2, "Model": 1, "FrozenModel": 0}


def test_no_class_keeps_more_than_15_mutable_fields():
    found = sizes()
    assert any(name.endswith("::TurnState") for name in found)  # the walk reaches the package
    over = {name: n for name, n in found.items() if n > LIMIT and name.split("::")[-1] not in ALLOWED}
    assert over == {}, f"split these by owner: {over}"
