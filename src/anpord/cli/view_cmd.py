"""``anpord view [--port N] [--host 127.0.0.1] [--export DIR [--force]]``: the web UI onto the
project's runs, or a static copy of it."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ._args import Parser, port_number

__all__ = ["build_parser", "main"]

DESCRIPTION = """Serve a read-only web view of this project's runs (.anpord/runs): the runs, each
run's grid of cases × variants, each trial's conversation, checks and events, and each cell's pass
rate over time, and two runs compared (/compare?base=RUN&cand=RUN). Works from anywhere inside
the project. Prints its URL and opens nothing; Ctrl-C or SIGTERM stops it. --export DIR writes
the same pages as static HTML that open from disk, and exits."""


def build_parser() -> Parser:
    p = Parser(prog="anpord view", description=DESCRIPTION)
    p.add_argument("--port", type=port_number, default=0, metavar="N",
                   help="port to listen on (default 0: a free one, printed at start)")
    p.add_argument("--host", default="127.0.0.1", metavar="HOST",
                   help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--export", metavar="DIR",
                   help="write the view as static HTML into DIR (opens from disk, no server) and exit")
    p.add_argument("--force", action="store_true", help="with --export: replace what DIR holds")
    return p


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.force and not args.export:
        parser.error("--force goes with --export DIR")
    from .._errors import UsageError
    from .._project import find_root

    try:
        project_folder = find_root([]).parent
    except UsageError as exc:
        print(f"anpord view: {exc}", file=sys.stderr)
        return 2
    try:
        import aiohttp  # noqa: F401 - checked before binding: a clear line, not a traceback
        import jinja2  # noqa: F401
    except ImportError as exc:
        print(f"anpord view: needs {exc.name} (pip install {exc.name})", file=sys.stderr)
        return 2
    from ..results._reader import mark_crashed_runs
    from ..view import StoreViewData, bind, serve_view

    mark_crashed_runs(project_folder)  # as every command does: a dead run reads as crashed
    if args.export:
        return _export(project_folder, Path(args.export), args.force)
    try:
        sock = bind(args.host, args.port)
    except OSError as exc:
        print(f"anpord view: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    return serve_view(StoreViewData(project_folder), sock, project_folder=project_folder)


def _export(project_folder: Path, folder: Path, force: bool) -> int:
    from ..view import StoreViewData
    from ..view._export import ExportError, export_view

    started = time.monotonic()
    try:
        report = export_view(StoreViewData(project_folder), folder.expanduser(), title=project_folder.name,
                             project_folder=str(project_folder), force=force)
    except ExportError as exc:
        print(f"anpord view: --export: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"anpord view: --export {folder}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(f"anpord view: wrote {report.pages} pages ({report.bytes / 1e6:.1f} MB) to {report.folder} in "
          f"{time.monotonic() - started:.1f} s; open {report.folder / 'index.html'}")
    return 0
