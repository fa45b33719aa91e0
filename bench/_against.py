"""Benchmarks side by side with another revision, or with another event loop: ``--against REV``.

A figure measured on one machine one day is not comparable with one measured on another; a ratio
measured in one sitting is. ``--against REV`` checks REV out into a temporary ``git worktree``
(removed afterwards) and runs every scenario for the current tree and for REV in the same
invocation, pairs interleaved (A, B, A, B, … ``--repeat`` times), each side's child processes
importing that side's ``src/`` (``PYTHONPATH`` and ``BENCH_SRC``). The benchmark's own code is
the current tree's for both sides: the old revision is measured with today's harness script.
A scenario that REV cannot run (an option it lacks) is reported as such for that side, not
silently measured as something else.

Each side's modules are read from a bytecode cache (a temporary ``PYTHONPYCACHEPREFIX``),
compiled before the first run (``compiled``), as an installed package's are: a run imports
much of the runner lazily, during its trials, and compiling those modules from source is no
cost of the runner's.

``--loops uvloop,asyncio`` does the same for the event loop a run uses (``ANPORD_LOOP``); with
``--against`` too, every revision is run with every loop.

Figures are each side's best of its ``--repeat`` runs (least wall time; CPU time the least CPU
time): a burst of load on a shared machine hits single runs, rarely every run of one side. The ratio printed is each column
over the last one (``cur/REV`` with ``--against``).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
_pycache: list[str] = []


def pycache() -> str:
    """The children's bytecode cache: a temporary folder (so nothing is written into a source
    tree), made on first use and removed when the benchmark ends."""
    if not _pycache:
        _pycache.append(tempfile.mkdtemp(prefix="anpord-bench-pycache-"))
        atexit.register(shutil.rmtree, _pycache[0], True)
    return _pycache[0]


@dataclass(frozen=True)
class Side:
    """One column of a comparison: a source tree and the environment its children run with."""

    label: str
    root: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def src(self) -> Path:
        return self.root / "src"

    def child_env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """The environment of a child process measuring this side: its ``src`` first, read from
        its bytecode cache (``compiled``) as an installed package's modules are."""
        env = dict(os.environ if base is None else base)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = pycache()
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(self.src), os.environ.get("PYTHONPATH")]))
        env["BENCH_SRC"] = str(self.src)
        env.update(self.env)
        return env

    def has(self, text: str) -> bool:
        """Whether this side's source mentions ``text`` (does it know an option at all?)."""
        for path in self.src.rglob("*.py"):
            try:
                if text in path.read_text(errors="replace"):
                    return True
            except OSError:
                continue
        return False


def compiled(side: Side) -> Side:
    """``side``, its sources compiled first into the bytecode cache its children read
    (``pycache``). A run imports much of the runner lazily, during its trials; an installed
    package loads those modules from bytecode, so a tree measured from source must not pay for
    compiling them (tens of milliseconds a run under ``PYTHONDONTWRITEBYTECODE=1``)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(side.src)], env=side.child_env(),
                   capture_output=True, check=True)
    return side


def add_arguments(ap: argparse.ArgumentParser, repeat: int = 3) -> None:
    ap.add_argument("--against", metavar="REV",
                    help="also measure git revision REV (a temporary worktree), interleaved")
    ap.add_argument("--loops", metavar="LOOPS",
                    help="comma-separated event loops to measure each side with (ANPORD_LOOP): "
                         "uvloop,asyncio")
    ap.add_argument("--repeat", type=int, default=repeat,
                    help=f"runs of each side, interleaved; the fastest counts (default {repeat})")


@contextlib.contextmanager
def sides(args: argparse.Namespace) -> Iterator[list[Side]]:
    """The columns ``args`` ask for: the current tree, then REV's worktree; each with every loop."""
    trees: list[tuple[str, Path]] = [("cur", ROOT)]
    with contextlib.ExitStack() as stack:
        if getattr(args, "against", None):
            trees.append((args.against, stack.enter_context(worktree(args.against))))
        loops = [x.strip() for x in (getattr(args, "loops", None) or "").split(",") if x.strip()]
        out: list[Side] = []
        for label, root in trees:
            if not loops:
                out.append(compiled(Side(label, root)))
            for loop in loops:
                out.append(compiled(Side(f"{label}·{loop}" if len(trees) > 1 else loop, root, {"ANPORD_LOOP": loop})))
        yield out


@contextlib.contextmanager
def worktree(rev: str) -> Iterator[Path]:
    """A detached checkout of ``rev`` in a temporary folder, removed on the way out."""
    parent = Path(tempfile.mkdtemp(prefix="anpord-bench-against-"))
    path = parent / "tree"
    proc = subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(path), rev],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        shutil.rmtree(parent, ignore_errors=True)
        raise SystemExit(f"--against {rev}: git worktree add failed: {proc.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(path)],
                       capture_output=True, check=False)
        shutil.rmtree(parent, ignore_errors=True)
        subprocess.run(["git", "-C", str(ROOT), "worktree", "prune"], capture_output=True, check=False)


def describe(all_sides: Sequence[Side]) -> str:
    parts = []
    for s in all_sides:
        rev = subprocess.run(["git", "-C", str(s.root), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, check=False).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(s.root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=False).stdout.strip()
        loop = f", ANPORD_LOOP={s.env['ANPORD_LOOP']}" if "ANPORD_LOOP" in s.env else ""
        parts.append(f"{s.label} = {rev}{'+changes' if dirty else ''}{loop}")
    return "; ".join(parts)


class Unsupported(Exception):
    """A scenario this side cannot run (an option its revision lacks): said, not measured."""


Result = dict[str, Any]


Runs = list[Result] | str  # a side's runs of one scenario, or why it could not run them


def interleaved(all_sides: Sequence[Side], repeat: int,
                scenarios: dict[str, Callable[[Side], Result]]) -> dict[str, list[Runs]]:
    """Every scenario for every side, ``repeat`` rounds; within a round each scenario runs for
    every side in turn (A, B, A, B …), so the sides share the machine's moods. For each scenario,
    each side's runs, or the reason it could not run (``Unsupported``)."""
    got: dict[str, list[Runs]] = {k: [[] for _ in all_sides] for k in scenarios}
    for _ in range(max(repeat, 1)):
        for kind, run in scenarios.items():
            for i, side in enumerate(all_sides):
                runs = got[kind][i]
                if isinstance(runs, str):
                    continue  # unsupported once, unsupported always
                try:
                    runs.append(run(side))
                except Unsupported as exc:
                    got[kind][i] = str(exc)
    return got


def fastest(runs: Runs, key: str = "wall_s") -> Result | str:
    """The run with the least ``key`` (a burst of load hits single runs, rarely all of them)."""
    if isinstance(runs, str):
        return runs
    return min(runs, key=lambda r: float(r[key])) if runs else "no run"


def least(runs: Runs, figure: Callable[[Result], float]) -> float | str:
    """The least of ``figure`` over the runs: CPU time is read from its own best run, not the
    fastest run's."""
    if isinstance(runs, str):
        return "n/a"
    return min(figure(r) for r in runs) if runs else "n/a"


def row(label: str, values: Sequence[float | str | None], fmt: str = "{:,.0f}", unit: str = "",
        width: int = 14) -> str:
    """One figure for every side, then each side's ratio to the last one."""
    cells = [v if isinstance(v, str) else ("—" if v is None else fmt.format(v) + unit) for v in values]
    text = f"  {label:<34}" + "".join(f"{c:>{width}}" for c in cells)
    numbers = [v for v in values if isinstance(v, (int, float))]
    if len(values) > 1 and isinstance(values[-1], (int, float)) and values[-1] and len(numbers) > 1:
        ratios = [f"{v / values[-1]:.2f}×" if isinstance(v, (int, float)) else "—" for v in values[:-1]]
        text += "  " + "".join(f"{r:>{width}}" for r in ratios)
    return text


def heading(all_sides: Sequence[Side], width: int = 14) -> str:
    text = f"  {'':<34}" + "".join(f"{s.label[:width - 1]:>{width}}" for s in all_sides)
    if len(all_sides) > 1:
        text += "  " + "".join(f"{(s.label + '/' + all_sides[-1].label)[:width - 1]:>{width}}" for s in all_sides[:-1])
    return text
