"""``anpord plugins [--json]``: every harness, sandbox, executor, importer and reporter anpord
can load — the built-ins and what installed packages add through entry points — and from which
package. Each is loaded to say so: one that does not load is listed with its one-line error."""

from __future__ import annotations

import json
import sys
from typing import Any

from ._args import Parser

__all__ = ["main"]

PROG = "anpord plugins"
DESCRIPTION = """List what anpord can load, by group: harnesses (a harness spec's head,
python:... or claude), sandboxes (Variant(sandbox=...)), executors (--executor), importers
(eval import --format) and reporters (--reporter). Third-party packages add names through the
entry-point groups anpord.harnesses, anpord.sandboxes, anpord.executors, anpord.importers and
anpord.reporters (docs/plugins.md). Exit 0, or 1 when a plugin does not load."""


def build_parser() -> Parser:
    p = Parser(prog=PROG, description=DESCRIPTION)
    p.add_argument("--json", action="store_true", help="print the list as JSON")
    return p


def registries() -> list[Any]:
    """The registries, in the order of ``GROUPS`` (each module imported only here)."""
    from ..harnesses import HARNESSES
    from ..importers import IMPORTERS
    from ..results._reporter import REPORTERS
    from ..runner import EXECUTORS
    from ..sandboxes import SANDBOXES

    return [HARNESSES, SANDBOXES, EXECUTORS, IMPORTERS, REPORTERS]


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    infos = [info for registry in registries() for info in registry.infos()]
    if args.json:
        print(json.dumps([i.to_dict() for i in infos], indent=2))
    else:
        rows = [(i.group.removeprefix("anpord."), i.name,
                 f"{i.package} {i.version}" if i.version else i.package,
                 f"error: {i.error}" if i.error else i.target) for i in infos]
        widths = [max(len(r[k]) for r in [("GROUP", "NAME", "PACKAGE", "")] + rows) for k in range(3)]
        for row in [("GROUP", "NAME", "PACKAGE", "LOADS")] + rows:
            print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[3])
    broken = [i for i in infos if i.error]
    for i in broken:
        print(f"anpord plugins: {i.error}", file=sys.stderr)
    return 1 if broken else 0
