"""``anpord show RUN [CASE]``: a run's grid, or one trial in full — read from the run folder."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from ._args import Parser
from ._history import CommandError, fail, project_folder

__all__ = ["main"]

PROG = "anpord show"
DESCRIPTION = """Show a run: its grid of cells (cases x variants). With CASE, one trial of that case
in full: the conversation, tool calls with their inputs and outputs, the checks with what they
expected and saw, the judges' choices and reasons, usage, logs and the error."""
VALUE_WIDTH = 2000  # characters of one value shown; the run folder has it whole


def build_parser() -> Parser:
    p = Parser(prog=PROG, description=DESCRIPTION)
    p.add_argument("run", metavar="RUN", help="a run id, unique prefix or `latest`")
    p.add_argument(
        "case", nargs="?", metavar="CASE", help="a case id of the run (or a unique prefix)"
    )
    p.add_argument(
        "--trial", type=int, default=0, metavar="N", help="which trial of the cell (default 0)"
    )
    p.add_argument("--variant", metavar="V", help="which variant, when the case ran on several")
    return p


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    from ..results._reader import _read, find_run, mark_crashed_runs

    try:
        folder = project_folder()
        mark_crashed_runs(folder)
        try:
            run_dir = find_run(args.run, folder)
        except Exception as exc:  # noqa: BLE001 - UsageError: maybe the store knows where it went
            raise CommandError(_elsewhere(folder, args.run) or str(exc)) from None
        reading = _read(run_dir)
        if args.case is None:
            _grid(reading)
            return 0
        trial = _pick(reading, args.case, args.variant, args.trial)
        _trial(reading, trial)
        return 0
    except CommandError as exc:
        return fail(PROG, str(exc))
    except Exception as exc:
        from .._errors import UsageError

        if isinstance(exc, (UsageError, OSError, ValueError)) and not isinstance(exc, BrokenPipeError):
            return fail(PROG, str(exc))
        raise


def _elsewhere(folder: Path, ref: str) -> str | None:
    """When the run is in the store but its folder is not here: where it was."""
    from ..store import StoreError, open_store

    try:
        with open_store(folder, create=False) as store:
            row = store.run(ref)
    except (StoreError, LookupError):
        return None
    where = f" on {row.host}" if row.host else ""
    return (
        f"run {row.run_id} is in the run history, but its folder {row.run_dir or '?'} is not "
        f"on this machine (recorded{where}; deleted?): `anpord db rebuild` drops runs whose "
        "folder is gone"
    )


# -- the grid --------------------------------------------------------------------------------


def _estimate_lines(reading: Any) -> list[str]:
    """Each variant's mean of per-case pass rates with its cluster-robust 95% interval and void
    share (docs/statistics.md)."""
    from ..results._text import pct, span
    from ..stats import estimate_variant

    cells = reading.cells
    out = []
    for variant in dict.fromkeys(c.variant for c in reading.record.cells):
        mine = [c for c in cells if c.variant == variant]
        e = estimate_variant(
            [(c.passed, c.measured) for c in mine],
            trials=sum(c.trials for c in mine),
            void=sum(c.void for c in mine),
        )
        if e.mean is None:
            out.append(f"  {variant}: no interval ({e.why or 'nothing ran'})")
            continue
        void = f", {e.void_rate:.0%} void" if e.void_rate else ""
        out.append(
            f"  {variant}: pass rate {pct(e.mean)} {span(e.ci_low, e.ci_high)} "
            f"(mean over {e.cases} case{'s' if e.cases != 1 else ''}{void})"
        )
    return out


def _grid(reading: Any) -> None:
    from ..results._text import MARKS, cell_state, measured, rate_with_interval

    rec = reading.record
    t = reading.totals()
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(rec.started_at))
    took = f", {rec.finished_at - rec.started_at:.1f}s" if rec.finished_at else ""
    print(f"run {rec.run_id}  {rec.status}  started {when}{took}")
    planned = sum(len(c.planned) for c in rec.cells)
    print(
        f"  {t['trials']} of {planned} trials: {t['passed']} passed, {t['failed'] + t['timed_out']} "
        f"failed, {t['scored']} scored, {t['void']} void, {t['skipped']} skipped"
    )
    for line in _estimate_lines(reading):
        print(line)
    if rec.regrade_of:
        print(f"  regrade of {rec.regrade_of}: its recorded answers and workspaces, decided by today's checks")
    elif rec.rerun_of:
        print(f"  re-run of the failed trials of {rec.rerun_of}")
    elif rec.run_kind == "audit":
        print("  an audit: saboteurs stood in for the agent (variant SABOTEUR:VARIANT); a passed trial let one through")
    if rec.resumed_at:
        print(f"  resumed {len(rec.resumed_at)}×")
    for problem in reading.problems:
        print(f"  ! {problem}")
    cells = {(c.case_id, c.variant): c for c in reading.cells}
    variants = list(dict.fromkeys(c.variant for c in rec.cells))
    cases = list(dict.fromkeys(c.case_id for c in rec.cells))
    texts: dict[tuple[str, str], str] = {}
    for key in ((c.case_id, c.variant) for c in rec.cells):
        c = cells.get(key)
        if c is None:
            texts[key] = "not run"
            continue
        text = f"{MARKS[cell_state(c)]} {c.passed}/{measured(c)} {rate_with_interval(c.passed, measured(c))}"
        texts[key] = text + (f" ○{c.void}" if c.void else "")
    print()
    case_w = max([4, *(len(c) for c in cases)])
    col_w = {v: max([len(v)] + [len(texts.get((c, v), "")) for c in cases]) for v in variants}
    print(("case".ljust(case_w) + "".join(f"  {v.ljust(col_w[v])}" for v in variants)).rstrip())
    for case in cases:
        print(
            (
                case.ljust(case_w)
                + "".join(f"  {texts.get((case, v), '').ljust(col_w[v])}" for v in variants)
            ).rstrip()
        )
    adaptive = [c for c in rec.cells if c.stop_reason is not None]
    if adaptive:
        print()
        print("Adaptive trials: why each cell stopped")
        for c in adaptive:
            n = sum(1 for r in reading.trials if r.case_id == c.case_id and r.variant == c.variant)
            print(f"  {c.case_id}  {c.variant}  {n} of at most {c.trials}: {c.stop_reason}")
    bad = [
        r
        for r in sorted(reading.trials, key=lambda r: (r.case_id, r.variant, r.trial))
        if r.verdict not in ("passed", "skipped")
    ]
    if bad:
        print()
        print("Not passed")
        for r in bad[:50]:
            reason = r.reason or (r.error.message if r.error else "")
            print(
                f"  {MARKS[r.verdict]} {r.case_id}  {r.variant}  #{r.trial}  {r.verdict}: {_one_line(reason)}"
            )
        if len(bad) > 50:
            print(f"  … {len(bad) - 50} more")
    print()
    print(
        f"Results: {_rel(reading.run_dir)}   (one trial: anpord show {rec.run_id} CASE [--trial N])"
    )


# -- one trial -------------------------------------------------------------------------------


def _pick(reading: Any, case: str, variant: str | None, index: int) -> Any:
    ids = list(dict.fromkeys(c.case_id for c in reading.record.cells))
    if case not in ids:
        hits = [i for i in ids if i.startswith(case)]
        if len(hits) != 1:
            some = ", ".join((hits or ids)[:5]) + ("…" if len(hits or ids) > 5 else "")
            what = "is ambiguous" if hits else "is not a case of this run"
            raise CommandError(f"{case!r} {what} (cases: {some})")
        case = hits[0]
    labels = list(dict.fromkeys(c.variant for c in reading.record.cells if c.case_id == case))
    if variant is not None:
        if variant not in labels:
            hits = [v for v in labels if variant in v]
            if len(hits) != 1:
                raise CommandError(
                    f"--variant {variant!r} names no single variant of {case} "
                    f"(its variants: {', '.join(labels)})"
                )
            variant = hits[0]
    elif len(labels) > 1:
        raise CommandError(
            f"{case} ran on several variants: pick one with --variant ({', '.join(labels)})"
        )
    else:
        variant = labels[0]
    for r in reading.trials:
        if r.case_id == case and r.variant == variant and r.trial == index:
            return r
    have = sorted(r.trial for r in reading.trials if r.case_id == case and r.variant == variant)
    ran = ", ".join(f"#{i}" for i in have) or "none"
    raise CommandError(f"{case} on {variant} has no finished trial #{index} (finished: {ran})")


def _show(value: Any) -> str:
    from ..results._text import escape_controls

    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=repr)
    text = escape_controls(text.replace("\n", "⏎ ")) if "\n" in text else escape_controls(text)
    return text if len(text) <= VALUE_WIDTH else text[: VALUE_WIDTH - 1] + "…"


def _one_line(text: str) -> str:
    from ..results._text import escape_controls

    first = text.strip().splitlines()[0] if text.strip() else ""
    return escape_controls(first)


def _trial(reading: Any, r: Any) -> None:
    from ..results._text import MARKS

    head = f"{MARKS[r.verdict]} {r.case_id}  {r.variant}  #{r.trial}  {r.verdict}"
    print(head + (f": {_one_line(r.reason)}" if r.reason else ""))
    print(
        f"  run {reading.run_id}  duration {r.duration:.2f}s"
        + (f"  score {r.score:.2f}" if r.score is not None else "")
    )
    try:
        events = reading.events(r)
    except Exception as exc:  # noqa: BLE001 - a damaged events file: show the rest
        events = []
        print(f"  ! events could not be read: {exc}")
    _conversation(events)
    if r.assertions:
        print("\nChecks")
        for a in r.assertions:
            mark = "✓" if a.status == "passed" else ("○" if a.status == "void" else "✗")
            limit = f" / {a.threshold:g}" if a.threshold is not None else ""
            print(f"  {mark} {a.display_name}  [{a.kind}, {a.status}]  score {a.score:g}{limit}")
            if a.expected is not None or a.actual is not None:
                print(f"      expected: {_show(a.expected)}")
                print(f"      actual:   {_show(a.actual)}")
            for line in (a.message or "").splitlines():
                print(f"      {_show(line)}")
    if r.judgments:
        print("\nJudges")
        for j in r.judgments:
            bits = [f"choice {j.choice!r}" if j.choice is not None else "no choice"]
            if j.score is not None:
                bits.append(
                    f"score {j.score:g}"
                    + (f" / {j.threshold:g}" if j.threshold is not None else "")
                )
            print(
                f"  {j.name}  [{j.status}]  {', '.join(bits)}  (model {j.model or '?'}{', cached' if j.cached else ''})"
            )
            if j.reason:
                print(f"      reason: {_show(j.reason)}")
            if j.error:
                print(f"      error: {_show(j.error)}")
    if r.usage:
        u = r.usage
        cost = u.get("cost")
        print(
            f"\nUsage: {u.get('input_tokens') or 0:g} input tokens, {u.get('output_tokens') or 0:g} "
            f"output tokens, cost {'unknown' if cost is None else f'${cost:.6f}'}"
        )
    logs = reading.logs(r)
    if logs:
        print("\nLogs")
        for entry in logs[:200]:
            # An entry may hold several lines (a traceback): shown as lines, the later ones
            # indented under the first, each cut to the width.
            first, *rest = str(entry).splitlines() or [""]
            print(f"  {_show(first)}")
            for line in rest:
                print(f"    {_show(line)}")
        if len(logs) > 200:
            print(f"  … {len(logs) - 200} more lines in the run folder")
    if r.error is not None:
        print(f"\nError ({r.error.kind}): {_show(r.error.message)}")
        if r.error.where:
            print(f"  at {r.error.where}")
    if r.files.get("traceback"):
        print(f"Traceback: {_rel(str(Path(reading.run_dir) / r.files['traceback']))}")
    elif r.error is not None and r.error.traceback:
        print("Traceback:")
        for line in r.error.traceback.rstrip().splitlines():
            print(f"  {line}")
    ref = r.events
    if ref is not None:
        print(
            f"\nEvents: {ref.count} in {_rel(str(Path(reading.run_dir) / 'events.ndjson'))} "
            f"(bytes {ref.offset}–{ref.offset + ref.length})"
        )


def _conversation(events: list[Any]) -> None:
    lines: list[str] = []
    for e in events:
        d = e.data
        if e.type == "message.completed":
            lines.append(f"  {d.get('role', '?')}: {_show(d.get('text', ''))}")
        elif e.type == "tool.called":
            lines.append(
                f"  → tool {d.get('name')} ({d.get('call_id', '')}) input: {_show(d.get('input'))}"
            )
        elif e.type == "tool.result":
            status = d.get("status", "?")
            lines.append(f"  ← tool {d.get('name')} [{status}] output: {_show(d.get('output'))}")
            if d.get("error"):
                lines.append(f"      error: {_show(d.get('error'))}")
        elif e.type == "input.requested":
            lines.append(
                f"  ? input requested: {_show(d.get('prompt'))} options {_show(d.get('options'))}"
            )
        elif e.type == "input.resolved":
            lines.append(f"  ! input answered: {_show(d.get('option_id', d.get('value')))}")
        elif e.type == "command.completed":
            lines.append(f"  $ {_show(d.get('command'))}  (exit {d.get('exit_code')})")
            if d.get("output"):
                lines.append(f"      {_show(d.get('output'))}")
        elif e.type in ("turn.failed", "session.failed"):
            lines.append(f"  ✗ {e.type}: {_show(d.get('error'))}")
        elif e.type == "turn.cancelled":
            lines.append("  ✗ turn cancelled")
    if lines:
        print("\nConversation")
        for line in lines:
            print(line)


def _rel(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
