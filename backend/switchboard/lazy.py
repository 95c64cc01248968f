"""Names a package holds, imported on first use: a package lists where each name lives, and
`lazy_names` gives it the module `__getattr__` that imports the name's module when the name is
first read (so that importing the package does not import its heavy parts)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """`homes`: name -> the package's module that defines it (".client" style, without the dot)."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f".{home}", package), name)
        sys.modules[package].__dict__[name] = value  # read once: later reads find it without this
        return value

    return __getattr__
