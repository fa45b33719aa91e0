"""``anpord db rebuild``: re-create the run store from the run folders."""

from __future__ import annotations

from ._args import Parser
from ._history import CommandError, fail, project_folder

__all__ = ["main"]

PROG = "anpord db"


def build_parser() -> Parser:
    p = Parser(prog=PROG, description="Look after the run store.")
    sub = p.add_subparsers(dest="action", metavar="ACTION")
    sub.add_parser(
        "rebuild", help="re-create the run store from the run folders under .anpord/runs"
    )
    return p


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.action != "rebuild":
        return fail(PROG, "say what to do: `anpord db rebuild`")
    from ..store import StoreError, store_location
    from ..store._sync import rebuild

    location = None
    try:
        location = store_location(project_folder())
        if location is None:
            return fail(PROG, "run history is off (ANPORD_DB=off): unset ANPORD_DB to keep it")
        report = rebuild(location)
    except (CommandError, StoreError) as exc:
        return fail(PROG, str(exc))
    except OSError as exc:
        where = location.display if location is not None else "the run store"
        return fail(PROG, f"cannot rebuild {where}: {exc.strerror or exc}")
    for problem in report.problems:
        print(f"anpord: warning: {problem}")
    removed = f", dropped {report.removed} whose folder is gone" if report.removed else ""
    print(
        f"rebuilt the run store {location.display} from {report.runs} run folder"
        f"{'s' if report.runs != 1 else ''} ({report.trials} trials, {report.baselines} baseline"
        f"{'s' if report.baselines != 1 else ''} restored{removed}) in {report.seconds:.2f}s"
    )
    return 0
