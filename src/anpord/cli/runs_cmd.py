"""``anpord runs``: the project's recent runs, newest first."""

from __future__ import annotations

import json
import time

from ._args import Parser, positive_int
from ._history import CommandError, fail, open_history, project_folder

__all__ = ["main"]

PROG = "anpord runs"


def build_parser() -> Parser:
    p = Parser(
        prog=PROG, description="List recent runs: id, when, totals, status (crashed runs included)."
    )
    p.add_argument(
        "--limit", type=positive_int, default=20, metavar="N", help="how many (default 20)"
    )
    p.add_argument("--json", action="store_true", help="print them as JSON")
    return p


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes < 60 else f"{minutes // 60}h{minutes % 60:02d}m"


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    from ..store import StoreError

    try:
        folder = project_folder()
        with open_history(folder) as store:
            rows = store.runs(limit=args.limit)
            total = store.count_runs()
    except (CommandError, StoreError) as exc:
        return fail(PROG, str(exc))
    gone = {
        r.run_id
        for r in rows
        if r.run_dir and not (folder / ".anpord" / "runs" / r.run_id).is_dir()
    }
    if args.json:
        out = []
        for r in rows:
            d = r.to_dict()
            d["folder_present"] = r.run_id not in gone
            out.append(d)
        print(json.dumps(out, ensure_ascii=False, indent=2))
        return 0
    if not rows:
        print("no runs yet (run `anpord eval`)")
        return 0
    table = [("run", "started", "status", "trials", "passed", "failed", "void", "time", "")]
    for r in rows:
        t = r.totals
        notes = []
        if r.kind == "regrade":
            notes.append(f"regrade of {r.rerun_of}" if r.rerun_of else "regrade")
        elif r.rerun_of:
            notes.append(f"re-run of {r.rerun_of}")
        elif r.kind not in ("eval", "rerun"):
            notes.append(r.kind)  # an audit, a cached run…: never a baseline
        if r.resumed:
            notes.append(f"resumed {r.resumed}×")
        if r.run_id in gone:
            notes.append("folder deleted")
        trials = (
            f"{t['trials']}/{r.planned_trials}"
            if t["trials"] != r.planned_trials
            else str(t["trials"])
        )
        table.append(
            (
                r.run_id,
                _when(r.started_at),
                r.status,
                trials,
                str(t["passed"]),
                str(t["failed"] + t["timed_out"]),
                str(t["void"]),
                _duration(r.duration),
                "; ".join(notes),
            )
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    right = {3, 4, 5, 6, 7}
    for row in table:
        cells = [
            c.rjust(widths[i]) if i in right else c.ljust(widths[i]) for i, c in enumerate(row)
        ]
        print("  ".join(cells).rstrip())
    if total > len(rows):
        print(f"… {total - len(rows)} older (--limit {total} to see them all)")
    return 0
