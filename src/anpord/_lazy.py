"""A package's names loaded on first use (PEP 562): the ``__getattr__`` every package that keeps
its imports light shares."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``, whose names live in the modules ``homes``
    names (relative to it, or absolute): the first look-up of a name imports its module and
    keeps the name in the package, so later look-ups never come here."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home, package), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
