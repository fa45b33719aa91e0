"""The console reporter.

On a terminal: colours, a live progress bar and, with several variants or trials, a live grid of
the cells in flight, redrawn in place at most ten times a second. Anywhere else (a pipe, a file,
``NO_COLOR``): plain lines only, no ANSI codes, no redraws. Either way the last line written is
exactly ``RunSummary.closing_line()``.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence, TextIO

from ._model import CellSummary, RunSummary, TrialResult, summarize_cell
from ._reporter import RunInfo

__all__ = ["ConsoleReporter", "failure_lines", "trial_label"]

Segment = tuple[str, str]  # (text, SGR code or "" for none)

MARKS = {"passed": "✓", "failed": "✗", "timed_out": "✗", "void": "○", "skipped": "–", "scored": "~"}
ASCII_MARKS = {
    "passed": "+",
    "failed": "x",
    "timed_out": "x",
    "void": "o",
    "skipped": "-",
    "scored": "~",
}
SGR = {
    "passed": "32",
    "failed": "31",
    "timed_out": "31",
    "void": "35",
    "skipped": "2",
    "scored": "33",
}
ASCII_FALLBACK = str.maketrans({"…": "...", "·": ".", "–": "-"})
DIM, BOLD = "2", "1"
REDRAW_INTERVAL = 0.1  # ≤ 10 redraws a second, however fast trials finish
MAX_DETAIL_TRIALS = 3  # failing trials detailed per cell in the grid; the rest are in the artifacts
MAX_LISTED = 20  # lines in the end-of-run lists of failures and void trials
VALUE_WIDTH = 300


def trial_label(trial: int) -> str:
    """How a trial is named to people: ``#0`` for the first, as in ``results.jsonl`` and its artifact
    file ``trials/<case-id>/<variant>/0.json``, so the number a person reads is the file to open."""
    return f"#{trial}"


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= VALUE_WIDTH else text[: VALUE_WIDTH - 1] + "…"


def failure_lines(result: TrialResult, run_dir: str | None = None) -> list[str]:
    """Plain lines explaining why a trial did not pass: the checks that failed and what they saw.

    Shared by the console and the JUnit writer. Empty for passed and skipped trials.
    """
    lines: list[str] = []
    v = result.verdict
    if v in ("passed", "skipped"):
        return lines
    if v == "scored":
        for a in result.assertions:
            if a.kind == "soft" and a.threshold is not None and a.score < a.threshold:
                lines.append(f"{a.display_name}: score {a.score:.2f} < {a.threshold:.2f}")
                if a.message:
                    lines.extend("  " + m for m in a.message.splitlines())
        return lines
    wanted = ("void", "error") if v == "void" else ("failed", "error")
    for a in result.assertions:
        if a.status not in wanted or (v != "void" and a.kind == "soft" and a.status == "failed"):
            continue
        lines.append(f"{a.display_name}  [{a.kind}, {a.status}]")
        if a.expected is not None or a.actual is not None:
            lines.append(f"  expected: {_show(a.expected)}")
            lines.append(f"  actual:   {_show(a.actual)}")
        if a.message:
            lines.extend("  " + m for m in a.message.splitlines())
    if result.error:
        lines.append(f"error: {result.error}")
    if result.artifact and (result.error or result.traceback):
        lines.append(f"traceback: {_artifact_path(result.artifact, run_dir)}")
    return lines


def _artifact_path(artifact: str, run_dir: str | None) -> str:
    return _display_path(os.path.join(run_dir, artifact) if run_dir else artifact)


def _display_path(path: str) -> str:
    """A path relative to the current folder when it lies inside it (shorter to read and click)."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return path
    return path if rel.startswith("..") else rel


def _pct(rate: float | None) -> str:
    return "–" if rate is None else f"{rate:.0%}"


def _measured(c: CellSummary) -> int:
    return c.trials - c.void - c.skipped


def _cell_state(c: CellSummary) -> str:
    """The verdict a whole cell is shown as."""
    if _measured(c) == 0:
        return "skipped" if c.skipped == c.trials else "void"
    if c.passed == _measured(c):
        return "passed"
    return "failed" if c.failed or c.timed_out else "scored"


def _stream_supports_unicode(stream: TextIO) -> bool:
    encoding = getattr(stream, "encoding", None)
    if not encoding:
        return True
    try:
        "✓✗○–…█░".encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed file
        return False


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

    def summary(self) -> CellSummary | None:
        return summarize_cell(self.results) if self.results else None


class ConsoleReporter:
    """Reports a run on a text stream; implements the ``Reporter`` protocol."""

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        color: bool | None = None,
        verbose: bool = False,
        live: bool | None = None,
    ) -> None:
        self.stream: TextIO = stream if stream is not None else sys.stdout
        # https://no-color.org: present and non-empty disables colour; TERM=dumb cannot move the cursor.
        fancy = (
            _isatty(self.stream)
            and not os.environ.get("NO_COLOR")
            and os.environ.get("TERM") != "dumb"
        )
        self.color = fancy if color is None else color
        self.live = fancy if live is None else live
        self.verbose = verbose
        self._ascii = not _stream_supports_unicode(self.stream)
        self.marks = ASCII_MARKS if self._ascii else MARKS
        self._bar = ("#", "-") if self._ascii else ("█", "░")

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

        # Live region state: the lines at the bottom that are erased and redrawn in place.
        self._region_height = 0
        self._pending: list[str] = []  # permanent lines waiting for the next paint
        self._last_paint = 0.0
        self._timer: Any = None  # asyncio.TimerHandle of a deferred paint
        self.paints = 0  # how many times the live region was drawn (for tests and curiosity)

    # -- Reporter protocol -------------------------------------------------------------------

    def on_run_start(self, run: RunInfo) -> None:
        self._run_dir = run.run_dir
        self._variants = list(run.variants)
        for planned in run.cells:
            self._cases.setdefault(planned.case_id, None)
            if planned.variant not in self._variants:
                self._variants.append(planned.variant)
            self._cells[(planned.case_id, planned.variant)] = _Cell(
                planned.case_id, planned.variant, max(planned.trials, 1)
            )
        self._planned = run.total_trials
        self._grid = len(self._variants) > 1 or any(c.planned > 1 for c in self._cells.values())
        self._started = time.monotonic()
        self._refresh(force=True)

    def on_trial_start(self, case_id: str, variant: str, trial: int) -> None:
        self._cell(case_id, variant).running += 1
        self._refresh()

    def on_log(self, case_id: str, variant: str, trial: int, message: str) -> None:
        if not self.verbose:
            return
        prefix = case_id if not self._grid else f"{case_id} [{variant} {trial_label(trial)}]"
        self._emit(
            [
                self._render([(prefix, DIM), (" | ", DIM), (line, "")])
                for line in message.splitlines() or [""]
            ]
        )

    def on_trial_end(self, result: TrialResult) -> None:
        self._record(result)
        self._refresh()

    def on_run_end(self, summary: RunSummary, results: Sequence[TrialResult]) -> None:
        for r in results:  # trials the reporter never heard of (a replay, a late reporter)
            if (r.case_id, r.variant, r.trial) not in self._seen:
                self._record(r)
        if self._run_dir is None:
            self._run_dir = summary.run_dir
        # Cells cut short by an interrupt are reported with what they have.
        for cell in self._cells.values():
            if cell.results and not cell.reported:
                self._report_cell(cell)
        self._close_region()
        out = self._summary_lines(summary, results)
        out.append(summary.closing_line())  # always plain: tools read it
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
        if cell.reported:  # more trials than were planned: report this one on its own
            self._emit(self._case_lines(result))
        elif cell.done:
            self._report_cell(cell)

    def _report_cell(self, cell: _Cell) -> None:
        cell.reported = True
        if self._grid:
            self._emit(self._grid_cell_lines(cell))
        else:
            for r in cell.results:
                self._emit(self._case_lines(r))

    # -- per-case and per-cell lines ---------------------------------------------------------

    def _mark(self, verdict: str) -> Segment:
        return (self.marks[verdict], SGR[verdict])

    def _case_lines(self, r: TrialResult) -> list[str]:
        head: list[Segment] = [
            self._mark(r.verdict),
            (" ", ""),
            (r.case_id, BOLD if r.verdict != "passed" else ""),
        ]
        head += self._verdict_tail(r)
        lines = [self._render(head)]
        lines += [self._render([("    " + line, "")]) for line in failure_lines(r, self._run_dir)]
        return lines

    def _verdict_tail(self, r: TrialResult) -> list[Segment]:
        v = r.verdict
        if v == "passed":
            return [(f"  {r.duration:.2f}s", DIM)]
        if v == "scored":
            return [(f"  {self._score_text(r)}", SGR[v])]
        label = "timed out" if v == "timed_out" else v
        reason = r.reason or r.error or ""
        if reason.lower().startswith(label):  # "timed out after 30s" says it already
            return [(f"  {reason}", SGR[v])]
        return [(f"  {label}" + (f": {reason}" if reason else ""), SGR[v])]

    @staticmethod
    def _score_text(r: TrialResult) -> str:
        missed = [
            a
            for a in r.assertions
            if a.kind == "soft" and a.threshold is not None and a.score < a.threshold
        ]
        if len(missed) == 1:
            return f"score {missed[0].score:.2f} < {missed[0].threshold:.2f}"
        score = r.score if r.score is not None else (missed[0].score if missed else None)
        text = "scored" if score is None else f"score {score:.2f}"
        return text + (f" ({len(missed)} soft checks below threshold)" if missed else "")

    def _grid_cell_lines(self, cell: _Cell) -> list[str]:
        c = summarize_cell(cell.results)
        state = _cell_state(c)
        measured = _measured(c)
        head: list[Segment] = [
            self._mark(state),
            (" ", ""),
            (cell.case_id, BOLD if state != "passed" else ""),
            (f"  {cell.variant}  ", ""),
            *(
                [
                    (f"{c.passed}/{measured} passed", SGR[state]),
                    (f"  (pass rate {_pct(c.pass_rate)})", DIM),
                ]
                if measured
                else [("not measured", SGR[state])]
            ),
        ]
        if c.scored:
            head.append((f"  {c.scored} scored", SGR["scored"]))
        if c.skipped:
            head.append((f"  {c.skipped} skipped", SGR["skipped"]))
        if c.void:
            head.append((f"  {c.void} void", SGR["void"]))
        missing = cell.planned - len(cell.results)
        if missing > 0:
            head.append((f"  ({missing} not run)", DIM))
        lines = [self._render(head)]
        # Void trials apart, one line per distinct reason.
        for reason, trials in _group_reasons(r for r in cell.results if r.verdict == "void"):
            lines.append(
                self._render(
                    [("    ", ""), self._mark("void"), (f" {trials} void: {reason}", SGR["void"])]
                )
            )
        failing = [r for r in cell.results if r.verdict in ("failed", "timed_out", "scored")]
        for r in sorted(failing, key=lambda r: r.trial)[:MAX_DETAIL_TRIALS]:
            tail = self._verdict_tail(r)
            lines.append(
                self._render(
                    [("    ", ""), self._mark(r.verdict), (f" {trial_label(r.trial)}", "")] + tail
                )
            )
            lines += [
                self._render([("        " + line, "")]) for line in failure_lines(r, self._run_dir)
            ]
        if len(failing) > MAX_DETAIL_TRIALS:
            more = len(failing) - MAX_DETAIL_TRIALS
            lines.append(
                self._render([(f"    … {more} more not passed (see the trial artifacts)", DIM)])
            )
        return lines

    # -- end of run --------------------------------------------------------------------------

    def _summary_lines(self, summary: RunSummary, results: Sequence[TrialResult]) -> list[str]:
        cells = summary.cells or [s for cell in self._cells.values() if (s := cell.summary())]
        out: list[str] = [""]
        if self._grid and cells:
            out += self._table(cells) + [""]
            out += self._void_list(results)
        elif not self._grid:
            out += self._not_passed_list(results)
        variants = self._ordered(self._variants, (c.variant for c in cells))
        if len(variants) > 1:
            out.append(self._render([("Pass rate by variant", BOLD)]))
            width = max(len(v) for v in variants)
            for variant in variants:
                mine = [c for c in cells if c.variant == variant]
                passed = sum(c.passed for c in mine)
                measured = sum(_measured(c) for c in mine)
                void = sum(c.void for c in mine)
                rate = passed / measured if measured else None
                seg: list[Segment] = [
                    (f"  {variant:<{width}}  {passed}/{measured}  ", ""),
                    (_pct(rate), BOLD),
                ]
                if void:
                    seg.append((f"  ({void} void)", SGR["void"]))
                out.append(self._render(seg))
            out.append("")
        run_dir = summary.run_dir or self._run_dir
        if run_dir:
            out.append(self._render([("Results: ", DIM), (_display_path(run_dir), "")]))
        if summary.interrupted:
            done = len(results) or self._finished
            of = f" of {self._planned}" if self._planned else ""
            out.append(
                self._render(
                    [
                        (
                            f"Interrupted: {done}{of} trials finished; finished trials are kept.",
                            SGR["failed"],
                        )
                    ]
                )
            )
        return out

    def _table(self, cells: list[CellSummary]) -> list[str]:
        """Cases × variants, each cell's tally and pass rate."""
        variants = self._ordered(self._variants, (c.variant for c in cells))
        cases = self._ordered(self._cases, (c.case_id for c in cells))
        by_key = {(c.case_id, c.variant): c for c in cells}
        texts: dict[tuple[str, str], tuple[str, str]] = {}
        for key, c in by_key.items():
            text = f"{c.passed}/{_measured(c)} {_pct(c.pass_rate)}"
            if c.void:
                text += f" {self.marks['void']}{c.void}"
            texts[key] = (text, SGR[_cell_state(c)])
        case_w = max(len("case"), *(len(c) for c in cases))
        col_w = {
            v: max(len(v), *(len(t) for (_, vv), (t, _) in texts.items() if vv == v))
            for v in variants
        }
        header: list[Segment] = [("case", BOLD), (" " * (case_w - 4), "")]
        for v in variants:
            header += [("  ", ""), (v, BOLD), (" " * (col_w[v] - len(v)), "")]
        lines = [self._render(header).rstrip()]
        for case in cases:
            seg: list[Segment] = [(f"{case:<{case_w}}", "")]
            for v in variants:
                text, sgr = texts.get((case, v), ("", ""))
                seg += [("  ", ""), (text, sgr), (" " * (col_w[v] - len(text)), "")]
            lines.append(self._render(seg).rstrip())
        return lines

    def _void_list(self, results: Sequence[TrialResult]) -> list[str]:
        voids = [r for r in self._all_results(results) if r.verdict == "void"]
        if not voids:
            return []
        out = [self._render([(f"Void trials ({len(voids)}, not counted in pass rates)", BOLD)])]
        groups: dict[tuple[str, str], list[TrialResult]] = {}
        for r in voids:
            groups.setdefault((r.case_id, r.variant), []).append(r)
        lines = [
            self._render(
                [("  ", ""), self._mark("void"), (f" {case}  {variant}  {trials}: {reason}", "")]
            )
            for (case, variant), rs in groups.items()
            for reason, trials in _group_reasons(rs)
        ]
        return out + _capped(lines) + [""]

    def _not_passed_list(self, results: Sequence[TrialResult]) -> list[str]:
        bad = [r for r in self._all_results(results) if r.verdict not in ("passed", "skipped")]
        if not bad:
            return []
        out = [self._render([("Not passed", BOLD)])]
        lines = [
            self._render(
                [("  ", ""), self._mark(r.verdict), (f" {r.case_id}", "")] + self._verdict_tail(r)
            )
            for r in bad
        ]
        return out + _capped(lines) + [""]

    @staticmethod
    def _ordered(planned: Iterable[str], present: Iterable[str]) -> list[str]:
        """The names present, in plan order first (completion order is noise)."""
        have = dict.fromkeys(present)
        return [n for n in planned if n in have] + [n for n in have if n not in planned]

    def _all_results(self, results: Sequence[TrialResult]) -> list[TrialResult]:
        if results:
            return list(results)
        return [r for cell in self._cells.values() for r in cell.results]

    # -- output ------------------------------------------------------------------------------

    def _render(self, segments: Sequence[Segment], width: int | None = None) -> str:
        """Join segments, colouring when enabled and cutting to ``width`` visible characters."""
        out: list[str] = []
        used = 0
        for text, sgr in segments:
            if width is not None:
                room = width - used
                if room <= 0:
                    break
                if len(text) > room:
                    text = text[: room - 1] + "…"
            used += len(text)
            out.append(f"\x1b[{sgr}m{text}\x1b[0m" if self.color and sgr and text else text)
        return "".join(out)

    def _write(self, text: str) -> None:
        if self._ascii:  # e.g. a cp1252 file: never fail a run over a glyph
            encoding = getattr(self.stream, "encoding", None) or "ascii"
            text = text.translate(ASCII_FALLBACK).encode(encoding, "replace").decode(encoding)
        self.stream.write(text)
        self.stream.flush()

    def _emit(self, lines: list[str]) -> None:
        if not lines:
            return
        if not self.live:
            self._write("\n".join(lines) + "\n")
            return
        self._pending.extend(lines)
        self._refresh()

    def _refresh(self, force: bool = False) -> None:
        """Paint the live region now if due, else make sure a paint follows shortly."""
        if not self.live:
            return
        if force or time.monotonic() - self._last_paint >= REDRAW_INTERVAL:
            self._paint()
        elif not self._schedule() and self._pending:
            # No event loop to come back later: print the lines now; the region waits for a paint.
            self._write(self._erase() + "\n".join(self._pending) + "\n")
            self._pending.clear()

    def _schedule(self) -> bool:
        if self._timer is not None:
            return True
        asyncio = sys.modules.get("asyncio")  # never import it just for this
        if asyncio is None:
            return False
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        delay = max(REDRAW_INTERVAL - (time.monotonic() - self._last_paint), 0.0)
        self._timer = loop.call_later(delay, self._deferred_paint)
        return True

    def _deferred_paint(self) -> None:
        self._timer = None
        self._paint()

    def _erase(self) -> str:
        if not self._region_height:
            return ""
        up = f"\x1b[{self._region_height - 1}A" if self._region_height > 1 else ""
        self._region_height = 0
        return "\r" + up + "\x1b[J"

    def _paint(self) -> None:
        self._last_paint = time.monotonic()
        self.paints += 1
        parts = [self._erase()]
        if self._pending:
            parts.append("\n".join(self._pending) + "\n")
            self._pending.clear()
        region = self._region_lines()
        # No newline after the last line: the cursor stays on it, so erasing never leaves a blank.
        parts.append("\n".join(region))
        self._region_height = len(region)
        self._write("".join(parts))

    def _close_region(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self.live:
            return
        text = self._erase()
        if self._pending:
            text += "\n".join(self._pending) + "\n"
            self._pending.clear()
        if text:
            self._write(text)

    def _terminal_size(self) -> tuple[int, int]:
        try:
            size = os.get_terminal_size(self.stream.fileno())
            return size.columns, size.lines
        except (AttributeError, OSError, ValueError):
            return int(os.environ.get("COLUMNS") or 80), int(os.environ.get("LINES") or 24)

    def _region_lines(self) -> list[str]:
        cols, rows = self._terminal_size()
        width = max(cols - 1, 20)  # one column spare: a full line would wrap on some terminals
        lines = self._live_grid(width, max(rows - 3, 1)) if self._grid else []
        return lines + [self._progress_line(width)]

    def _progress_line(self, width: int) -> str:
        total = self._planned or self._finished
        done = self._finished
        counts: list[Segment] = []
        for verdict in ("passed", "failed", "timed_out", "scored", "void", "skipped"):
            n = self._counts.get(verdict, 0)
            if n:
                counts.append((f" {self.marks[verdict]}{n}", SGR[verdict]))
        elapsed = time.monotonic() - self._started
        tail = f" {done}/{total} trials"
        tail_len = len(tail) + sum(len(t) for t, _ in counts) + len(f"  {elapsed:.1f}s")
        bar_w = max(min(30, width - tail_len - 2), 5)
        filled = int(bar_w * done / total) if total else 0
        full, empty = self._bar
        segments: list[Segment] = [
            (full * filled, SGR["passed"] if not self._counts.get("failed") else SGR["failed"]),
            (empty * (bar_w - filled), DIM),
            (tail, ""),
            *counts,
            (f"  {elapsed:.1f}s", DIM),
        ]
        return self._render(segments, width)

    def _live_grid(self, width: int, max_rows: int) -> list[str]:
        """Rows for the cases still in flight, a column per variant with its tally so far."""
        active = [
            case
            for case in self._cases
            if any(
                (c := self._cells.get((case, v))) and (c.running or c.results) and not c.done
                for v in self._variants
            )
        ]
        if not active:
            return []
        shown = active[: max(min(12, max_rows - 2), 1)]
        case_w = min(max(len(c) for c in shown), 40)
        col_w = max(max(len(v) for v in self._variants), 8)
        header: list[Segment] = [(" " * case_w, "")]
        for v in self._variants:
            header += [("  ", ""), (v, BOLD), (" " * (col_w - len(v)), "")]
        lines = [self._render(header, width)]
        for case in shown:
            seg: list[Segment] = [(f"{case[:case_w]:<{case_w}}", "")]
            for v in self._variants:
                text, sgr = self._live_tally(self._cells.get((case, v)))
                seg += [("  ", ""), (text, sgr), (" " * (col_w - len(text)), "")]
            lines.append(self._render(seg, width))
        if len(active) > len(shown):
            lines.append(
                self._render([(f"… {len(active) - len(shown)} more cases in progress", DIM)], width)
            )
        return lines

    def _live_tally(self, cell: _Cell | None) -> Segment:
        if cell is None:
            return ("", "")
        if not cell.results:
            return ("…" if cell.running else "·", DIM)
        c = summarize_cell(cell.results)
        text = f"{c.passed}/{_measured(c)}"
        if c.void:
            text += f" {self.marks['void']}{c.void}"
        if not cell.done:
            text += "…"
        return (text, SGR[_cell_state(c)])


def _group_reasons(results: Any) -> list[tuple[str, str]]:
    """``[(reason, "#1, #3"), ...]``: trials grouped by their one-line reason, in first-seen order."""
    groups: dict[str, list[int]] = {}
    for r in results:
        groups.setdefault(r.reason or r.error or "no reason given", []).append(r.trial)
    return [
        (reason, ", ".join(trial_label(t) for t in sorted(ts))) for reason, ts in groups.items()
    ]


def _capped(lines: list[str]) -> list[str]:
    if len(lines) <= MAX_LISTED:
        return lines
    return lines[:MAX_LISTED] + [f"  … {len(lines) - MAX_LISTED} more (see results.jsonl)"]
