#!/usr/bin/env python3
"""Rewrite a Switchboard tree's imports and dotted names after modules moved.

    python scripts/move_modules.py <tree> <moves.txt>

`moves.txt` holds one move a line: `old.dotted.path new.dotted.path` (blank lines and `#`
comments are skipped). Run it after the files are at their new places (`git mv`), or on a
tree where a branch written against the old paths was merged into one with the new paths.

What it rewrites:
- Python (backend/, tests/, bench/, scripts/, every .py under the tree):
  `from a.b import x`, `from a import b` (-> `from new_parent import new_name as b`),
  relative imports (also those of a moved file that still point from its old place),
  `import a.b`, and dotted names `switchboard.a.b...` anywhere (monkeypatch targets,
  logger names, `python -m` lines).
- Other text files (.md, .toml, .cfg, .ini, .yml, .sh, scripts/*, Dockerfile): dotted
  names and paths of moved files (`backend/switchboard/<folder>/<module>.py`, `<folder>/<module>.py`,
  and a root module alone in backticks); in Python files too (comments, path strings).
  This script leaves itself alone.

It is idempotent: a second run changes nothing. Afterwards run
`ruff format . && ruff check --fix .` (it writes one import per line and does not sort).
Not rewritten: module names held as plain words (lazy-import tables such as
`_HOME = {"Name": "module"}` in a package's __init__, `import_module(".x", __name__)`).
"""

from __future__ import annotations

import ast
import os
import re
import sys
from pathlib import Path

SKIP_DIRS = {".git", ".venv", "node_modules", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache", "frontend"}
TEXT_SUFFIXES = {".md", ".toml", ".cfg", ".ini", ".yml", ".yaml", ".sh", ".txt", ".rst"}
DOTTED = re.compile(r"(?<![\w.])switchboard(?:\.[A-Za-z_]\w*)+")
IMPORTED = re.compile(r"\s+import\s+\(?\s*(\w+)")
BARE = re.compile(r"(?<=`)[A-Za-z_]\w*\.py(?=`)")
PATH = re.compile(r"(?<![\w/.-])((?:backend/)?switchboard/)?((?:[A-Za-z_]\w*/)*[A-Za-z_]\w*\.py)\b( {2,}(?=\S))?")


def read_moves(path: Path) -> dict[str, str]:
    moves: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        old, new = line.split()
        moves[old] = new
    clash = set(moves) & set(moves.values())
    if clash:
        sys.exit(f"a new path is also an old one: {sorted(clash)}")
    return moves


class Tree:
    def __init__(self, root: Path, moves: dict[str, str]) -> None:
        self.root = root
        self.backend = root / "backend"
        self.moves = moves
        self.back = {new: old for old, new in moves.items()}
        self.modules: dict[str, Path] = {}  # every module and package under backend/
        for path in self.backend.rglob("*.py"):
            if any(part in SKIP_DIRS for part in path.parts):
                continue
            self.modules[self.name_of(path)] = path
        self.path_moves = {self._file(old): self._file(new) for old, new in moves.items()}

    @staticmethod
    def _file(dotted: str) -> str:
        return "/".join(dotted.split(".")[1:]) + ".py"

    def name_of(self, path: Path) -> str:
        parts = list(path.relative_to(self.backend).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        return ".".join(parts)

    def exists(self, name: str) -> bool:
        return name in self.modules

    def is_package(self, name: str) -> bool:
        path = self.modules.get(name)
        return path is not None and path.name == "__init__.py"

    def package_has(self, package: str, name: str) -> bool:
        """`from package import name` works: a module, or a name the package's __init__ binds."""
        if self.exists(f"{package}.{name}") or f"{package}.{name}" in self.moves:
            return True
        path = self.modules.get(package)
        if path is None or path.name != "__init__.py":
            return False
        return name in _bound_names(path)

    def current(self, dotted: str) -> str:
        """An old module's new name; the name itself otherwise."""
        return self.moves.get(dotted, dotted)


def _bound_names(init: Path) -> set[str]:
    names: set[str] = set()
    tree = ast.parse(init.read_text())
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.If):  # TYPE_CHECKING imports of a lazy package
            for inner in node.body:
                if isinstance(inner, ast.ImportFrom):
                    names.update(a.asname or a.name for a in inner.names)
    return names


def _resolve(package: str, level: int, module: str | None) -> str:
    parts = package.split(".")
    base = parts[: len(parts) - level + 1]
    return ".".join(base + ([module] if module else []))


def _relative(package: str, target: str) -> tuple[int, str]:
    """`target` as seen from `package`: (level, module) for `from <dots><module> import`."""
    here, there = package.split("."), target.split(".")
    common = 0
    while common < min(len(here), len(there)) and here[common] == there[common]:
        common += 1
    return len(here) - common + 1, ".".join(there[common:])


class PyFile:
    def __init__(self, tree: Tree, path: Path, text: str) -> None:
        self.tree = tree
        self.text = text
        in_backend = tree.backend in path.parents
        self.name = tree.name_of(path) if in_backend else None
        if self.name is None:
            self.package = self.old_package = None
        else:
            self.package = self.name if path.name == "__init__.py" else self.name.rpartition(".")[0]
            old_name = tree.back.get(self.name, self.name)
            self.old_package = old_name if path.name == "__init__.py" else old_name.rpartition(".")[0]

    def base_of(self, node: ast.ImportFrom) -> str | None:
        """The absolute module the statement imports from, as the file's author meant it."""
        t = self.tree
        if not node.level:
            return node.module
        if self.package is None:
            return None  # a relative import outside backend/ (tests' own packages)
        names = [a.name for a in node.names]
        new = _resolve(self.package, node.level, node.module)
        moved_file = self.old_package != self.package
        if node.module is None:
            if not moved_file or all(t.package_has(new, n) for n in names):
                return new
            old = _resolve(self.old_package or "", node.level, None)
            return old if all(t.package_has(old, n) for n in names) else new
        if t.exists(new) or new in t.moves or not moved_file:
            return new
        old = _resolve(self.old_package or "", node.level, node.module)
        return old if (t.exists(old) or old in t.moves) else new

    def rewrite(self, node: ast.ImportFrom) -> str | None:
        t = self.tree
        base = self.base_of(node)
        if base is None or not (base == "switchboard" or base.startswith("switchboard.")):
            return None
        changed = False
        names = node.names
        if base in t.moves and not all(t.exists(f"{base}.{a.name}") for a in names if a.name != "*"):
            base, changed = t.moves[base], True  # an old module (not the package that took its name)
        groups: dict[str, list[str]] = {}
        for alias in names:
            full = f"{base}.{alias.name}"
            if full in t.moves:  # `from package import old_module`
                parent, _, leaf = t.moves[full].rpartition(".")
                local = alias.asname or alias.name
                groups.setdefault(parent, []).append(leaf if leaf == local else f"{leaf} as {local}")
                changed = True
            else:
                groups.setdefault(base, []).append(
                    alias.name if not alias.asname else f"{alias.name} as {alias.asname}"
                )
        if node.level and self.package is not None:
            meant = _resolve(self.package, node.level, node.module)
            changed = changed or meant != base
        if not changed:
            return None
        lines = []
        for target, items in groups.items():
            if node.level and self.package is not None:
                level, rest = _relative(self.package, target)
                source = "." * level + rest
            else:
                source = target
            plain = [i for i in items if " as " not in i]
            if plain:
                lines.append(f"from {source} import {', '.join(plain)}")
            # ruff's isort keeps each `x as y` apart: one line each, not a block it must split
            lines += [f"from {source} import {i}" for i in items if " as " in i]
        return ("\n" + " " * node.col_offset).join(lines)

    def lazy_table_edits(self, module: ast.Module) -> list[tuple[ast.expr, str]]:
        """A package __init__'s lazy-import table (`{"Name": "module"}`): a moved module's entry."""
        if self.package is None or self.name != self.package:
            return []
        edits: list[tuple[ast.expr, str]] = []
        for node in ast.walk(module):
            if not isinstance(node, ast.Dict):
                continue
            for value in node.values:
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    new = self.tree.moves.get(f"{self.package}.{value.value}")
                    if new and new.startswith(self.package + "."):
                        edits.append((value, repr(new.removeprefix(self.package + ".")).replace("'", '"')))
        return edits

    def apply(self) -> str:
        try:
            module = ast.parse(self.text)
        except SyntaxError:
            return self.text
        edits = []
        for node in ast.walk(module):
            if isinstance(node, ast.ImportFrom):
                new = self.rewrite(node)
                if new is not None:
                    edits.append((node, new))
        edits += self.lazy_table_edits(module)
        text = self.text
        if edits:
            offsets = _line_offsets(text)
            pieces, last = [], 0
            for node, new in sorted(edits, key=lambda e: (e[0].lineno, e[0].col_offset)):
                start = offsets[node.lineno - 1] + _char_col(text, offsets[node.lineno - 1], node.col_offset)
                end_line = offsets[(node.end_lineno or node.lineno) - 1]
                end = end_line + _char_col(text, end_line, node.end_col_offset or 0)
                pieces += [text[last:start], new]
                last = end
            text = "".join(pieces) + text[last:]
        return rewrite_text(self.tree, text)


def _line_offsets(text: str) -> list[int]:
    offsets, total = [], 0
    for line in text.splitlines(keepends=True):
        offsets.append(total)
        total += len(line)
    offsets.append(total)
    return offsets


def _char_col(text: str, line_start: int, byte_col: int) -> int:
    """ast gives columns in UTF-8 bytes."""
    line_end = text.find("\n", line_start)
    line = text[line_start : line_end if line_end >= 0 else len(text)]
    return len(line.encode()[:byte_col].decode(errors="ignore"))


def rewrite_text(tree: Tree, text: str) -> str:
    def dotted(match: re.Match[str]) -> str:
        parts = match.group(0).split(".")
        following = IMPORTED.match(text, match.end())
        for cut in range(len(parts), 1, -1):
            prefix = ".".join(parts[:cut])
            if prefix in tree.moves:
                rest = parts[cut:]
                if rest and tree.exists(f"{prefix}.{rest[0]}"):
                    return match.group(0)  # the new package that took the old module's name
                if not rest and following and tree.exists(f"{prefix}.{following.group(1)}"):
                    return match.group(0)  # `from <that package> import <its module>`
                return ".".join([tree.moves[prefix], *rest])
        return match.group(0)

    text = DOTTED.sub(dotted, text)

    def path(match: re.Match[str]) -> str:
        prefix, rel = match.group(1) or "", match.group(2)
        if not prefix and "/" not in rel:
            return match.group(0)
        new = tree.path_moves.get(rel)
        if not new:
            return match.group(0)
        pad = match.group(3) or ""
        if pad:  # a column of an aligned table keeps its place
            pad = " " * max(2, len(pad) + len(rel) - len(new))
        return prefix + new + pad

    text = PATH.sub(path, text)
    # a module of the package's root named alone in backticks, as docs name one
    return BARE.sub(lambda m: tree.path_moves.get(m.group(0), m.group(0)), text)


def files(root: Path):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS and not d.startswith(".")]
        for filename in filenames:
            path = Path(dirpath) / filename
            if (
                path.suffix == ".py"
                or path.suffix in TEXT_SUFFIXES
                or filename == "Dockerfile"
                or (path.suffix == "" and path.parent.name == "scripts")
            ):
                yield path


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    root, moves = Path(argv[1]).resolve(), read_moves(Path(argv[2]))
    tree = Tree(root, moves)
    missing = [new for new in moves.values() if not tree.exists(new)]
    if missing:
        print(f"not at their new places yet (git mv them first): {missing}", file=sys.stderr)
    changed = 0
    for path in files(root):
        if path.resolve() == Path(__file__).resolve():
            continue
        try:
            text = path.read_text()
        except (UnicodeDecodeError, OSError):
            continue
        new = PyFile(tree, path, text).apply() if path.suffix == ".py" else rewrite_text(tree, text)
        if new != text:
            path.write_text(new)
            changed += 1
            print(path.relative_to(root))
    print(f"{changed} files rewritten", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
