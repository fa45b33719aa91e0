"""The traces package's modules import each other without a loop: the receiver base and the
routers (hub, in-process) below, the trial's ``TraceService`` on top. Every import counts, at
module level, under ``TYPE_CHECKING`` or inside a function, since each ties the modules together."""

from __future__ import annotations

import ast
from pathlib import Path

import anpord.traces

PACKAGE = Path(anpord.traces.__file__).parent


def _sibling_imports(path: Path) -> set[str]:
    """The modules of this package that ``path`` imports, however it does."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                names.add(node.module.split(".")[0])
            else:  # ``from . import _x``
                names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("anpord.traces."):
            names.add(node.module.split(".")[2])
    return names


def _loop(graph: dict[str, set[str]]) -> list[str] | None:
    """One import loop of ``graph``, as the modules along it, or None."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(name: str) -> list[str] | None:
        state[name] = 1
        path.append(name)
        for other in sorted(graph.get(name, ())):
            if state.get(other) == 1:
                return path[path.index(other):] + [other]
            if other not in state and (found := visit(other)):
                return found
        path.pop()
        state[name] = 2
        return None

    for name in sorted(graph):
        if name not in state and (found := visit(name)):
            return found
    return None


def test_the_traces_modules_import_without_a_loop() -> None:
    graph = {p.stem: _sibling_imports(p) - {"__init__"} for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    assert {"_receiver", "_hub", "_inprocess", "_service"} <= graph.keys()
    assert {"_hub", "_inprocess", "_receiver"} <= graph["_service"]
    assert _loop(graph) is None, " -> ".join(_loop(graph) or [])
    # The routers need only the receiver's protocol, never the service built on them.
    assert "_service" not in graph["_hub"] | graph["_inprocess"] | graph["_receiver"]


def test_the_loop_finder_finds_a_loop(tmp_path: Path) -> None:
    """Guards the test above: imports inside a function or under TYPE_CHECKING are read too."""
    module = tmp_path / "m.py"
    module.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ._a import A\n"
                      "def f():\n    from ._b import b\n    from . import _c\n", encoding="utf-8")
    assert _sibling_imports(module) == {"_a", "_b", "_c"}
    assert _loop({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _loop({"a": {"b"}, "b": set()}) is None
