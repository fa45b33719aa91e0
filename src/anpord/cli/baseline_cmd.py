"""``anpord baseline set RUN``: make every cell of a run the baseline its later readings are
compared with."""

from __future__ import annotations

from ._args import Parser
from ._history import CommandError, fail, open_history, project_folder

__all__ = ["main"]

PROG = "anpord baseline"


def build_parser() -> Parser:
    p = Parser(prog=PROG, description="Choose the readings later runs are compared with.")
    sub = p.add_subparsers(dest="action", metavar="ACTION")
    s = sub.add_parser("set", help="make every cell of RUN its cell's baseline")
    s.add_argument("run", metavar="RUN", help="a run id, unique prefix or `latest`")
    return p


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.action != "set":
        return fail(PROG, "say what to do: `anpord baseline set RUN`")
    import time

    from ..store import StoreError
    from ..store._sync import record_baseline_set

    try:
        folder = project_folder()
        with open_history(folder, writes=True) as store:
            at = time.time()
            run_id, cells = store.set_baseline(args.run, set_at=at)
        record_baseline_set(folder, run_id, at)
    except (CommandError, StoreError, LookupError) as exc:
        return fail(PROG, str(exc).strip("'\""))
    except OSError as exc:
        return fail(PROG, f"cannot write {exc.filename}: {exc.strerror or exc}")
    if not cells:
        print(f"run {run_id} measured nothing (every trial void or skipped): no baseline changed")
        return 0
    print(
        f"run {run_id} is now the baseline of its {cells} measured cell{'s' if cells != 1 else ''}"
    )
    return 0
