"""The console reporter.

On a terminal: colours, a live progress bar and, with several variants or trials, a live grid of
the cells in flight (see ``_live``). Anywhere else (a pipe, a file, ``NO_COLOR``): plain lines
only, no escape codes, no redraws. Either way the last line is exactly
``RunSummary.closing_line()``.

A case gets its line when all of its cell's trials have finished: one line per case for a single
variant and trial, else one line per cell (the grid), then a table of every cell at the end.
"""

from __future__ import annotations

import io
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from ._live import LiveRegion
from ._model import CellSummary, RunSummary, TrialResult, summarize_cell
from ._reporter import RunInfo
from ._text import (
    ASCII_MARKS,
    BOLD,
    DIM,
    MARKS,
    SGR,
    Segment,
    cell_state,
    display_path,
    escape_controls,
    failure_lines,
    fit,
    group_reasons,
    measured,
    pct,
    rate_with_interval,
    span,
    score_text,
    trial_label,
    usage_text,
    usd,
)

__all__ = ["ConsoleReporter"]

ASCII_FALLBACK = str.maketrans({"…": "...", "·": ".", "–": "-"})
MAX_DETAIL_TRIALS = 3  # distinct failures detailed per cell in the grid; the rest: artifacts
MAX_LISTED = 20  # lines in the end-of-run lists of failures and void trials
MAX_LIVE_ROWS = 12  # cases in flight drawn in the live grid


@dataclass
class _Cell:
    case_id: str
    variant: str
    planned: int
    results: list[TrialResult] = field(default_factory=list)
    running: int = 0
    reported: bool = False

    @property
    def done(self) -> bool:
        return len(self.results) >= self.planned


class ConsoleReporter:
    """Reports a run on a text stream; implements the ``Reporter`` protocol.

    ``color`` and ``live`` default to on when the stream is a terminal and ``NO_COLOR`` is unset.
    ``verbose`` streams ``t.log`` lines as they come. ``redact`` (a ``Redactor``) is applied to
    all text the reporter writes: trial text before it is escaped or cut to the terminal's width
    (so a cut never leaves a secret's first half), then every write as a whole.
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        color: bool | None = None,
        verbose: bool = False,
        live: bool | None = None,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        self.stream: TextIO = stream if stream is not None else sys.stdout
        self._redact = redact
        # no-color.org: NO_COLOR present and non-empty; TERM=dumb cannot move the cursor.
        fancy = (
            _isatty(self.stream)
            and not os.environ.get("NO_COLOR")
            and os.environ.get("TERM") != "dumb"
        )
        self.color = fancy if color is None else color
        self.live = fancy if live is None else live
        self.verbose = verbose
        self._ascii = not _can_encode(self.stream, "✓✗○–…█░·")
        self.marks = ASCII_MARKS if self._ascii else MARKS
        self._closed = False  # the reader went away (a broken pipe)
        self._bar = ("#", "-") if self._ascii else ("█", "░")
        self._region = LiveRegion(self._write, self._region_lines) if self.live else None

        self._run_dir: str | None = None
        self._variants: list[str] = []
        self._cases: dict[str, None] = {}  # case ids in plan order
        self._cells: dict[tuple[str, str], _Cell] = {}
        self._grid = False
        self._planned = 0
        self._finished = 0
        self._counts: dict[str, int] = {}
        self._seen: set[tuple[str, str, int]] = set()
        self._started = time.monotonic()

    @property
    def paints(self) -> int:
        """How many times the live region was drawn."""
        return self._region.paints if self._region else 0

    # -- Reporter protocol -------------------------------------------------------------------

    def on_run_start(self, run: RunInfo) -> None:
        self._run_dir = run.run_dir
        self._variants = list(run.variants)
        for planned in run.cells:
            self._cases.setdefault(planned.case_id, None)
            if planned.variant not in self._variants:
                self._variants.append(planned.variant)
            key = (planned.case_id, planned.variant)
            self._cells[key] = _Cell(*key, planned=max(planned.trials, 1))
        self._planned = run.total_trials
        self._grid = len(self._variants) > 1 or any(c.planned > 1 for c in self._cells.values())
        self._started = time.monotonic()
        if self._region:
            self._region.refresh(force=True)

    def on_trial_start(self, case_id: str, variant: str, trial: int) -> None:
        self._cell(case_id, variant).running += 1
        if self._region:
            self._region.refresh()

    def on_log(self, case_id: str, variant: str, trial: int, message: str) -> None:
        if not self.verbose:
            return
        prefix = f"{case_id} [{variant} {trial_label(trial)}]" if self._grid else case_id
        if self._redact is not None:  # whole, before a multi-line secret is split into lines
            message = self._redact(message)
        lines = message.splitlines() or [""]
        self._emit([self._render([(prefix + " | ", DIM), (line, "")]) for line in lines])

    def on_trial_end(self, result: TrialResult) -> None:
        self._record(result)
        if self._region:
            self._region.refresh()

    def on_run_end(self, summary: RunSummary, results: Sequence[TrialResult]) -> None:
        for r in results:  # trials never reported to us (a replay, a reporter added late)
            if (r.case_id, r.variant, r.trial) not in self._seen:
                self._record(r)
        self._run_dir = self._run_dir or summary.run_dir
        for cell in self._cells.values():  # cells cut short by an interrupt, with what they have
            if cell.results and not cell.reported:
                self._report_cell(cell)
        if self._region:
            self._region.close()
        out = self._summary_lines(summary, results)
        out.append(summary.closing_line())  # never coloured: tools read it
        self._write("\n".join(out) + "\n")

    # -- bookkeeping -------------------------------------------------------------------------

    def _cell(self, case_id: str, variant: str) -> _Cell:
        cell = self._cells.get((case_id, variant))
        if cell is None:  # not planned (no on_run_start): report each trial as it comes
            self._cases.setdefault(case_id, None)
            if variant not in self._variants:
                self._variants.append(variant)
            cell = self._cells[(case_id, variant)] = _Cell(case_id, variant, 1)
        return cell

    def _record(self, result: TrialResult) -> None:
        self._seen.add((result.case_id, result.variant, result.trial))
        self._finished += 1
        self._counts[result.verdict] = self._counts.get(result.verdict, 0) + 1
        cell = self._cell(result.case_id, result.variant)
        cell.running = max(cell.running - 1, 0)
        cell.results.append(result)
        if cell.reported:  # more trials than were planned: this one on its own
            self._emit(self._case_lines(result))
        elif cell.done:
            self._report_cell(cell)

    def _report_cell(self, cell: _Cell) -> None:
        cell.reported = True
        if self._grid:
            self._emit(self._cell_lines(cell))
        else:
            for r in cell.results:
                self._emit(self._case_lines(r))

    # -- per-case and per-cell lines ---------------------------------------------------------

    def _mark(self, verdict: str) -> Segment:
        return (self.marks[verdict], SGR[verdict])

    def _details(self, r: TrialResult, indent: str) -> list[str]:
        return [self._render([(indent + line, "")]) for line in failure_lines(r, self._run_dir)]

    def _case_lines(self, r: TrialResult) -> list[str]:
        name = (r.case_id, "" if r.verdict == "passed" else BOLD)
        head = [self._mark(r.verdict), (" ", ""), name, *self._verdict_tail(r)]
        return [self._render(head), *self._details(r, "    ")]

    @staticmethod
    def _verdict_tail(r: TrialResult) -> list[Segment]:
        v = r.verdict
        if v == "passed":
            # A soft check without a threshold never fails a trial: its score still shows.
            score = f"  score {r.score:.2f}" if r.score is not None else ""
            return [(f"  {r.duration:.2f}s{score}", DIM)]
        if v == "scored":
            return [(f"  {score_text(r)}", SGR[v])]
        label = "timed out" if v == "timed_out" else v
        reason = r.reason or (r.error.message if r.error is not None else "")
        failing = [a for a in r.assertions if a.status == "error" or (a.kind == "gate" and a.status == "failed")]
        if v == "failed" and failing and reason.startswith(failing[0].display_name):
            # The details below carry each check's message: the headline only names them.
            reason = failing[0].display_name + (f" (+{len(failing) - 1} more)" if len(failing) > 1 else "")
        if reason.lower().startswith(label):  # "timed out after 30s" says it already
            return [(f"  {reason}", SGR[v])]
        return [(f"  {label}" + (f": {reason}" if reason else ""), SGR[v])]

    def _cell_lines(self, cell: _Cell) -> list[str]:
        """``✗ case  variant  2/3 passed``, void trials apart, then details. The rate and its
        interval are printed once, in the closing table."""
        c = summarize_cell(cell.results)
        state, n = cell_state(c), measured(c)
        head: list[Segment] = [
            self._mark(state),
            (" ", ""),
            (cell.case_id, "" if state == "passed" else BOLD),
            # One variant: the table's header names it once, not every cell's line.
            (f"  {cell.variant}  " if len(self._variants) > 1 else "  ", ""),
        ]
        if n:
            head.append((f"{c.passed}/{n} passed", SGR[state]))
        else:
            head.append(("not measured", SGR[state]))
        for count, verdict in ((c.scored, "scored"), (c.skipped, "skipped"), (c.void, "void")):
            if count:
                head.append((f"  {count} {verdict}", SGR[verdict]))
        if (missing := cell.planned - len(cell.results)) > 0:
            head.append((f"  ({missing} not run)", DIM))
        lines = [self._render(head)]
        for reason, trials in group_reasons(r for r in cell.results if r.verdict == "void"):
            lines.append(
                self._render(
                    [("    ", ""), self._mark("void"), (f" {trials} void: {reason}", SGR["void"])]
                )
            )
        # Trials that failed the same way are detailed once: "#0, #1, #2" then the details.
        same: dict[tuple[str, ...], list[TrialResult]] = {}
        for r in sorted(cell.results, key=lambda r: r.trial):
            if r.verdict in ("failed", "timed_out", "scored"):
                tail = "".join(t for t, _ in self._verdict_tail(r))
                key = (r.verdict, tail, *failure_lines(r, self._run_dir))
                same.setdefault(key, []).append(r)
        groups = list(same.values())
        for rs in groups[:MAX_DETAIL_TRIALS]:
            r = rs[0]
            label = (" " + ", ".join(trial_label(x.trial) for x in rs), "")
            lines.append(
                self._render([("    ", ""), self._mark(r.verdict), label, *self._verdict_tail(r)])
            )
            lines += self._details(r, "        ")
        if more := sum(len(rs) for rs in groups[MAX_DETAIL_TRIALS:]):
            lines.append(
                self._render([(f"    … {more} more not passed (see the trial artifacts)", DIM)])
            )
        return lines

    # -- end of run --------------------------------------------------------------------------

    def _summary_lines(self, summary: RunSummary, results: Sequence[TrialResult]) -> list[str]:
        cells = summary.cells or [
            summarize_cell(cell.results) for cell in self._cells.values() if cell.results
        ]
        everything = list(results) or [r for cell in self._cells.values() for r in cell.results]
        out: list[str] = [""]
        if self._grid:
            out += self._table(cells) + [""] if cells else []
            out += self._listed(
                f"Void trials ({sum(c.void for c in cells)}, not counted in pass rates)",
                self._void_lines(everything),
            )
        else:
            bad = [r for r in everything if r.verdict not in ("passed", "skipped")]
            out += self._listed(
                "Not passed",
                [
                    self._render(
                        [
                            ("  ", ""),
                            self._mark(r.verdict),
                            (f" {r.case_id}", ""),
                            *self._verdict_tail(r),
                        ]
                    )
                    for r in bad
                ],
            )
        out += self._variant_lines(cells)
        if summary.usage:
            out.append(self._render([("Usage: ", DIM), (usage_text(summary.usage, everything), "")]))
        if summary.run_cost is not None:
            out.append(self._render(_run_cost_line(summary.run_cost)))
        if run_dir := summary.run_dir or self._run_dir:
            out.append(self._render([("Results: ", DIM), (display_path(run_dir), "")]))
        if summary.interrupted:
            done = len(results) or self._finished
            of = f" of {self._planned}" if self._planned else ""
            text = f"Interrupted: {done}{of} trials finished; finished trials are kept."
            out.append(self._render([(text, SGR["failed"])]))
        comparison = summary.comparison
        for cell in comparison.regressed if comparison is not None else ():
            # One line per cell that regressed against its baseline, right above the closing line.
            out.append(self._render([
                (f"{self.marks['failed']} regressed: ", SGR["failed"]),
                (f"{cell.case_id}  {cell.variant}  {cell.reason}", ""),
            ]))
        if comparison is not None:
            from ._compare_text import variant_detail

            for v in comparison.regressed_variants:  # the paired test over all cases
                out.append(self._render([
                    (f"{self.marks['failed']} regressed: ", SGR["failed"]),
                    (f"variant {v.variant}  {variant_detail(v)}", ""),
                ]))
        return out

    def _listed(self, title: str, lines: list[str]) -> list[str]:
        if not lines:
            return []
        if len(lines) > MAX_LISTED:
            lines = lines[:MAX_LISTED] + [f"  … {len(lines) - MAX_LISTED} more (see results.jsonl)"]
        return [self._render([(title, BOLD)]), *lines, ""]

    def _void_lines(self, results: list[TrialResult]) -> list[str]:
        groups: dict[tuple[str, str], list[TrialResult]] = {}
        for r in results:
            if r.verdict == "void":
                groups.setdefault(r.cell_key, []).append(r)
        return [
            self._render(
                [("  ", ""), self._mark("void"), (f" {case}  {variant}  {trials}: {reason}", "")]
            )
            for (case, variant), rs in groups.items()
            for reason, trials in group_reasons(rs)
        ]

    def _variant_lines(self, cells: list[CellSummary]) -> list[str]:
        """Each variant's (or, with one, the run's) mean of per-case pass rates with its
        cluster-robust 95% interval, its trials and void share."""
        from ..stats import estimate_variant

        variants = _ordered(self._variants, (c.variant for c in cells))
        if not variants:
            return []
        several = len(variants) > 1
        out = [self._render([("Pass rate by variant" if several else "Pass rate", BOLD)])]
        width = max(len(v) for v in variants)
        for variant in variants:
            mine = [c for c in cells if c.variant == variant]
            passed, n = sum(c.passed for c in mine), sum(measured(c) for c in mine)
            void = sum(c.void for c in mine)
            e = estimate_variant(
                [(c.passed, measured(c)) for c in mine], trials=sum(c.trials for c in mine), void=void
            )
            cases = f"{e.cases} case{'s' if e.cases != 1 else ''}"
            seg: list[Segment] = [
                (f"  {variant:<{width}}  " if several else "  ", ""),
                (pct(e.mean), BOLD),
                (f" {span(e.ci_low, e.ci_high)}" if e.mean is not None else "", ""),
                (f"  mean over {cases}, {passed}/{n} trials" if e.cases else "  nothing measured", DIM),
            ]
            if void:
                seg.append((f"  ({void} void, {e.void_rate:.0%})", SGR["void"]))
            out.append(self._render(seg))
        return out + [""]

    def _table(self, cells: list[CellSummary]) -> list[str]:
        """Cases × variants: each cell's tally (passed/measured), pass rate and void count."""
        variants = _ordered(self._variants, (c.variant for c in cells))
        cases = _ordered(self._cases, (c.case_id for c in cells))
        texts: dict[tuple[str, str], Segment] = {}
        for c in cells:
            text = f"{c.passed}/{measured(c)} {rate_with_interval(c.passed, measured(c))}"
            if c.void:
                text += f" {self.marks['void']}{c.void}"
            texts[(c.case_id, c.variant)] = (text, SGR[cell_state(c)])
        case_w = max(len("case"), *(len(c) for c in cases))
        col_w = {
            v: max([len(v)] + [len(t) for (_, vv), (t, _) in texts.items() if vv == v])
            for v in variants
        }
        header: list[Segment] = [("case", BOLD), (" " * (case_w - 4), "")]
        for v in variants:
            header += [("  ", ""), (v, BOLD), (" " * (col_w[v] - len(v)), "")]
        lines = [self._render(header).rstrip()]
        for case in cases:
            row: list[Segment] = [(case.ljust(case_w), "")]
            for v in variants:
                text, sgr = texts.get((case, v), ("", ""))
                row += [("  ", ""), (text, sgr), (" " * (col_w[v] - len(text)), "")]
            lines.append(self._render(row).rstrip())
        return lines

    # -- the live region ---------------------------------------------------------------------

    def _terminal_size(self) -> tuple[int, int]:
        try:
            size = os.get_terminal_size(self.stream.fileno())
            return size.columns, size.lines
        except (AttributeError, OSError, ValueError):
            return int(os.environ.get("COLUMNS") or 80), int(os.environ.get("LINES") or 24)

    def _region_lines(self) -> list[str]:
        cols, rows = self._terminal_size()
        width = max(
            cols - 1, 20
        )  # a spare column: a line filling the width wraps on some terminals
        lines = self._live_grid(width, max_rows=max(rows - 4, 1)) if self._grid else []
        return lines + [self._progress_line(width)]

    def _progress_line(self, width: int) -> str:
        total, done = self._planned or self._finished, self._finished
        counts: list[Segment] = [
            (f" {self.marks[v]}{self._counts[v]}", SGR[v])
            for v in ("passed", "failed", "timed_out", "scored", "void", "skipped")
            if self._counts.get(v)
        ]
        tail = f" {done}/{total} trials"
        clock = f"  {time.monotonic() - self._started:.1f}s"
        bar_w = max(min(30, width - len(tail) - len(clock) - sum(len(t) for t, _ in counts)), 5)
        filled = bar_w * done // total if total else 0
        full, empty = self._bar
        failing = self._counts.get("failed") or self._counts.get("timed_out")
        segments: list[Segment] = [
            (full * filled, SGR["failed"] if failing else SGR["passed"]),
            (empty * (bar_w - filled), DIM),
            (tail, ""),
            *counts,
            (clock, DIM),
        ]
        return self._render(segments, width)

    def _live_grid(self, width: int, max_rows: int) -> list[str]:
        """A row per case still in flight, a column per variant with its tally so far."""
        active = [
            case
            for case in self._cases
            if any(
                (cell := self._cells.get((case, v)))
                and (cell.running or cell.results)
                and not cell.done
                for v in self._variants
            )
        ]
        if not active:
            return []
        shown = active[: max(min(MAX_LIVE_ROWS, max_rows - 2), 1)]
        case_w = min(max(len(c) for c in shown), 40)
        col_w = max(8, *(len(v) for v in self._variants))
        header: list[Segment] = [(" " * case_w, "")]
        for v in self._variants:
            header += [("  ", ""), (v, BOLD), (" " * (col_w - len(v)), "")]
        lines = [self._render(header, width)]
        for case in shown:
            row: list[Segment] = [(fit(case, case_w)[0].ljust(case_w), "")]
            for v in self._variants:
                text, sgr = self._live_tally(self._cells.get((case, v)))
                row += [("  ", ""), (text, sgr), (" " * (col_w - len(text)), "")]
            lines.append(self._render(row, width))
        if len(active) > len(shown):
            more = f"… {len(active) - len(shown)} more cases in progress"
            lines.append(self._render([(more, DIM)], width))
        return lines

    def _live_tally(self, cell: _Cell | None) -> Segment:
        """``2/3`` (passed/measured so far), ``○1`` void, ``…`` while trials remain."""
        if cell is None:
            return ("", "")
        if not cell.results:
            return ("…" if cell.running else "·", DIM)
        c = summarize_cell(cell.results)
        text = f"{c.passed}/{measured(c)}"
        if c.void:
            text += f" {self.marks['void']}{c.void}"
        if not cell.done:
            text += "…"
        return (text, SGR[cell_state(c)])

    # -- output ------------------------------------------------------------------------------

    def _render(self, segments: Sequence[Segment], width: int | None = None) -> str:
        """Join segments, coloured when enabled, cut to ``width`` terminal columns when given.

        Control characters in trial text (an agent's own escape codes, a stray ``\\r``) are shown
        escaped: they can neither colour plain output nor break the redraws.
        """
        out: list[str] = []
        used = 0
        for text, sgr in segments:
            text = escape_controls(self._redact(text) if self._redact is not None else text)
            if width is not None:
                if used >= width:
                    break
                text, cols = fit(text, width - used)
                used += cols
            out.append(f"\x1b[{sgr}m{text}\x1b[0m" if self.color and sgr and text else text)
        return "".join(out)

    def _emit(self, lines: list[str]) -> None:
        if not lines:
            return
        if self._region:
            self._region.print(lines)
        else:
            self._write("\n".join(lines) + "\n")

    def _write(self, text: str) -> None:
        if self._redact is not None:
            text = self._redact(text)
        if self._ascii:  # e.g. a cp1252 file: never fail a run over a glyph
            encoding = getattr(self.stream, "encoding", None) or "ascii"
            text = text.translate(ASCII_FALLBACK).encode(encoding, "replace").decode(encoding)
        if self._closed:
            return
        try:
            self.stream.write(text)
            self.stream.flush()
        except BrokenPipeError:
            # `anpord eval | head`: the reader left. Stop writing, and point the descriptor at
            # /dev/null so the interpreter's final flush does not complain either.
            self._closed = True
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, self.stream.fileno())
                os.close(devnull)
            except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
                pass


def _ordered(planned: Iterable[str], present: Iterable[str]) -> list[str]:
    """The names present, in plan order first (completion order is noise)."""
    have = dict.fromkeys(present)
    planned = list(planned)
    return [n for n in planned if n in have] + [n for n in have if n not in planned]


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed file
        return False


def _can_encode(stream: TextIO, sample: str) -> bool:
    encoding = getattr(stream, "encoding", None)
    if not encoding:
        return True
    try:
        sample.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def _run_cost_line(run_cost: dict[str, Any]) -> list[tuple[str, str]]:
    """``Run cost: $1.20 of $2.00`` or, once reached, which trials it kept from starting."""
    spent, limit = usd(run_cost["spent"]), usd(run_cost["limit"])
    if not run_cost.get("reached"):
        return [("Run cost: ", DIM), (f"{spent} of the {limit} limit", "")]
    text = f"{spent} spent, limit {limit} reached: {run_cost['not_run']} trials not run"
    return [("Run cost: ", DIM), (text, SGR["failed"])]
