"""Runner overhead: how fast trivial trials go through the runner, and what parked sessions cost.

    python bench/runner_overhead.py [--cases 10000] [--parked 1000] [--cpu N] [--no-cli]

Figures (printed, not asserted):

1. **Trials per second**: N trivial in-process cases — an echo agent, one ``includes`` check,
   artifacts on (run.json, results.jsonl, one JSON + one NDJSON per trial), no reporter — run by the
   runner API (``execute(plan, opts, reporters=[])``) on one core. The N cases are one eval file
   fanned out with ``each=`` (one module to import, N rows), so the figure is the per-trial cost
   (scheduling, sessions, events, assertions, verdict, artifacts), not the cost of importing N
   files. Target: ≥ 5,000 trials/s. Also printed: the same run through the CLI
   (``anpord eval``, stdout to /dev/null), wall time including start-up and discovery.
2. **Parked sessions**: 1,000 cases run at once (``max_concurrency=1000``), each sends a message to
   an agent that waits in ``turn.request_input``, asserts ``parked()``, and holds until all 1,000
   are parked; RSS is read at that moment, then every case answers and finishes. Target: peak RSS
   ≤ 150 MB for the whole process.

Each scenario runs in a fresh child process pinned to one core (``os.sched_setaffinity``), so one
scenario's memory never shows in another's peak RSS. On one core, every CPU cycle the run
store's writer thread spends is wall time the trials do not get: "the store's share of the wall"
(store on vs off) is the cost of filing, which must stay under 5%. On one core a run files from a
thread; with a second core, a run of 1,000 trials or more files from a process of its own
(docs/history.md), so the same share is also measured with the run on every core the machine
allows, not pinned: the median wall of ``--repeat`` (at least 3) interleaved runs with the store
on and off, and the CPU the filer process used.

Side by side (``_against``): ``--against REV`` runs every scenario for the current tree and for
REV (a temporary ``git worktree``), ``--loops uvloop,asyncio`` for each event loop, interleaved
``--repeat`` times (default 3), and prints each figure beside the other sides' with the ratio to
the last column and the CPU time per trial (user+sys of the child). ``--no-parked`` skips the
parked sessions there.

    python bench/runner_overhead.py --against main --repeat 5 --no-parked
    python bench/runner_overhead.py --loops uvloop,asyncio
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from collections.abc import Callable
from typing import Any

from _against import (Side, Unsupported, add_arguments, compiled, describe, fastest, heading, interleaved, least,
                      row, sides)

TARGET_TRIALS_PER_S = 5000.0
TARGET_PARKED_MB = 150.0

AGENT = """
async def agent(turn):
    return turn.input


async def parking_agent(turn):
    answer = await turn.request_input("May I?", options=["approve", "deny"], tool_name="act")
    return f"{answer}d"
"""

CONFIG = """
from anpord import define_eval_config

config = define_eval_config(harness="python:bench_agents.agent:{attr}", max_concurrency={conc}, timeout=300)
"""

TRIVIAL_EVAL = """
from anpord import define_eval
from anpord.expect import includes


@define_eval(each=range({n}))
async def test(t, row):
    await t.send(f"ping {{row}}")
    t.check(t.reply, includes("ping"))
"""

PARKED_EVAL = """
import asyncio
import json
import os
import resource

from anpord import define_eval

N = {n}
STATS = {stats!r}
_parked = 0
_all_parked = asyncio.Event()


def _vm_rss_kb():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


@define_eval(each=range(N))
async def test(t, row):
    global _parked
    await t.send(f"task {{row}}")
    t.parked()
    _parked += 1
    if _parked == N:
        with open(STATS, "w") as fh:
            json.dump({{"parked": _parked, "vm_rss_kb": _vm_rss_kb(),
                       "ru_maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}}, fh)
        _all_parked.set()
    await _all_parked.wait()
    await t.respond_all("approve")
    t.message_includes("approved")
"""


def _pin(cpu: int | None) -> int | None:
    if not hasattr(os, "sched_setaffinity"):
        return None
    cpus = sorted(os.sched_getaffinity(0))
    chosen = cpu if cpu is not None else cpus[-1]
    os.sched_setaffinity(0, {chosen})
    return chosen


def _make_project(kind: str, n: int, conc: int) -> Path:
    folder = Path(tempfile.mkdtemp(prefix=f"anpord-bench-{kind}-"))
    (folder / "evals").mkdir()
    (folder / "bench_agents").mkdir()
    (folder / "bench_agents" / "__init__.py").write_text("")
    (folder / "bench_agents" / "agent.py").write_text(AGENT)
    attr = "agent" if kind == "trials" else "parking_agent"
    (folder / "evals" / "evals.config.py").write_text(CONFIG.format(attr=attr, conc=conc))
    if kind == "trials":
        (folder / "evals" / "trivial.eval.py").write_text(TRIVIAL_EVAL.format(n=n))
    else:
        stats = str(folder / "parked_stats.json")
        (folder / "evals" / "parked.eval.py").write_text(PARKED_EVAL.format(n=n, stats=stats))
    return folder


def _rss_now_kb() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def _scenario(kind: str, n: int, cpu: int | None) -> dict[str, Any]:
    """Runs inside the child process; returns the figures as a dict. ``trials-noart`` is the
    trivial run with artifacts off: a diagnostic that separates runner cost from file-system cost."""
    free = kind.endswith("-free")  # on every core the machine allows, as a user's run is
    pinned = None if free else _pin(cpu)
    kind = kind.removesuffix("-free")
    artifacts = kind != "trials-noart"
    history = kind not in ("trials-noart", "trials-nohist")
    kind = "trials" if kind.startswith("trials") else kind
    conc = 8 if kind == "trials" else n
    folder = _make_project(kind, n, conc)
    if history and kind == "trials":
        # A project with history: its run store exists (creating one, once, imports SQLAlchemy).
        # Made by another process, so this one imports only what a run imports.
        subprocess.run([sys.executable, "-c", "import sys; from anpord.store import open_store; "
                        "open_store(sys.argv[1]).close()", str(folder)], check=True)
    os.chdir(folder)
    try:
        from anpord.runner import (
            RunOptions,
            build_plan,
            execute,
            find_project,
            load_cases,
            select_files,
        )

        writer_cpu = _time_the_store_writer() if history else None
        rss_before_kb = _rss_now_kb()
        t0 = time.perf_counter()
        project = find_project([])
        cases = load_cases(select_files(project, []))
        opts = RunOptions(artifacts=artifacts, history=history)
        plan = build_plan(project, cases, opts)
        t1 = time.perf_counter()
        before = resource.getrusage(resource.RUSAGE_SELF)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)  # the store's filer, when it has one
        summary = execute(plan, opts, reporters=[]).summary
        after = resource.getrusage(resource.RUSAGE_SELF)
        children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        t2 = time.perf_counter()
        out: dict[str, Any] = {
            "kind": kind,
            "n": n,
            "cpu": pinned,
            "max_concurrency": plan.max_concurrency,
            "plan_s": t1 - t0,
            "execute_s": t2 - t1,
            "user_s": after.ru_utime - before.ru_utime,
            "sys_s": after.ru_stime - before.ru_stime,
            "children_cpu_s": (children_after.ru_utime + children_after.ru_stime)
            - (children.ru_utime + children.ru_stime),
            "totals": summary.totals,
            "exit_code": summary.exit_code,
            "rss_before_kb": rss_before_kb,
            "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
            "artifact_files": sum(len(f) for _, _, f in os.walk(summary.run_dir))
            if artifacts
            else 0,
        }
        if writer_cpu:
            out["writer_cpu_s"] = writer_cpu[0]
        stats = folder / "parked_stats.json"
        if stats.exists():
            out["at_parked"] = json.loads(stats.read_text())
        return out
    finally:
        os.chdir("/")
        shutil.rmtree(folder, ignore_errors=True)


def _time_the_store_writer() -> list[float]:
    """The run store's writer thread's own CPU time, once it ends (a diagnostic: on one core,
    the share of the wall its filing takes): the list it will be in."""
    seen: list[float] = []
    try:
        from anpord.store._writer import StoreWriter
    except ImportError:
        return seen
    work = StoreWriter._work

    def timed(self: Any) -> None:
        try:
            work(self)
        finally:
            seen.append(time.thread_time())

    StoreWriter._work = timed  # type: ignore[method-assign]
    return seen


def _child(kind: str, n: int, cpu: int | None, side: Side) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", kind, "--n", str(n)]
    if cpu is not None:
        cmd += ["--cpu", str(cpu)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=side.child_env())
    if proc.returncode != 0:
        raise SystemExit(f"{kind} scenario failed for {side.label} (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    figures: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    figures["wall_s"] = figures["execute_s"]
    figures["cpu_s"] = figures["user_s"] + figures["sys_s"]
    return figures


def _cli_run(n: int, cpu: int | None, side: Side) -> dict[str, Any]:
    """The same trivial run through the real CLI, console output to /dev/null."""
    folder = _make_project("trials", n, 8)
    chosen = cpu if cpu is not None else max(os.sched_getaffinity(0))
    try:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "anpord", "eval"],
            cwd=folder,
            env=side.child_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=lambda: os.sched_setaffinity(0, {chosen}),
            check=False,
        )
        wall = time.perf_counter() - t0
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return {
            "exit_code": proc.returncode,
            "wall_s": wall,
            "cpu_s": (usage.ru_utime + usage.ru_stime) - (before.ru_utime + before.ru_stime),
            "children_max_rss_kb": usage.ru_maxrss,
            "stderr": proc.stderr[-2000:],
        }
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _mb(kb: Any) -> float:
    return float(kb) / 1024


def _loop_check(side: Side) -> None:
    if "ANPORD_LOOP" in side.env and not side.has("ANPORD_LOOP"):
        raise Unsupported(f"{side.label}: this revision has no ANPORD_LOOP setting (it always runs asyncio's loop)")


def _single(args: argparse.Namespace) -> int:
    """One tree, one run of each scenario: the figures against their targets."""
    side = compiled(Side("cur", Path(__file__).resolve().parents[1]))
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, pinned to one core per scenario"
    )
    trials = _child("trials", args.cases, args.cpu, side)
    rate = args.cases / float(trials["execute_s"])
    print()
    print(
        f"1. trivial trials, runner API, artifacts on, no reporter (one each= file of {args.cases:,} rows)"
    )
    print(
        f"   totals: {trials['totals']}  exit {trials['exit_code']}  artifact files: {trials['artifact_files']:,}"
    )
    print(
        f"   discovery + plan: {trials['plan_s']:.3f} s   execute: {trials['execute_s']:.3f} s"
        f" (CPU: user {trials['user_s']:.3f} s, kernel {trials['sys_s']:.3f} s)"
    )
    print(
        f"   trials/s: {rate:,.0f}   target ≥ {TARGET_TRIALS_PER_S:,.0f}   ratio {rate / TARGET_TRIALS_PER_S:.2f}×"
        f"   {'MET' if rate >= TARGET_TRIALS_PER_S else 'MISSED'}"
    )
    print(
        f"   per trial: {1e6 / rate:,.0f} µs   peak RSS: {_mb(trials['peak_rss_kb']):.1f} MB"
        f" (before the run: {_mb(trials['rss_before_kb']):.1f} MB)"
    )

    nohist = _child("trials-nohist", args.cases, args.cpu, side)
    nohist_rate = args.cases / float(nohist["execute_s"])
    loss = 1 - rate / nohist_rate
    print(
        f"   the run folder alone (run store off): {nohist_rate:,.0f} trials/s"
        f" ({1e6 / nohist_rate:,.0f} µs per trial; target ≥ {TARGET_TRIALS_PER_S:,.0f}"
        f" {'MET' if nohist_rate >= TARGET_TRIALS_PER_S else 'MISSED'}) — filing the run in the store"
        f" (on one core: from a thread) costs {loss:.1%} (target < 5%: {'MET' if loss < 0.05 else 'MISSED'})"
    )

    free = {"trials-free": [], "trials-nohist-free": []}
    for _ in range(max(args.repeat, 3)):  # interleaved, so load drifts hit both alike
        for kind, runs in free.items():
            runs.append(_child(kind, args.cases, args.cpu, side))
    walls = {k: statistics.median(r["wall_s"] for r in runs) for k, runs in free.items()}
    free_loss = 1 - walls["trials-nohist-free"] / walls["trials-free"]
    filer_cpu = statistics.median(r["children_cpu_s"] for r in free["trials-free"])
    print(
        f"   on all {len(os.sched_getaffinity(0))} cores, not pinned (median of {len(free['trials-free'])} interleaved"
        f" runs each): store on {walls['trials-free']:.3f} s, off {walls['trials-nohist-free']:.3f} s — filing costs"
        f" {free_loss:.1%} of the wall (target < 5%: {'MET' if free_loss < 0.05 else 'MISSED'}); its filer"
        f" process used {1e6 * filer_cpu / args.cases:,.0f} µs CPU per trial"
    )

    bare = _child("trials-noart", args.cases, args.cpu, side)
    bare_rate = args.cases / float(bare["execute_s"])
    print(
        f"   diagnostic, artifacts off: {bare_rate:,.0f} trials/s ({1e6 / bare_rate:,.0f} µs per trial;"
        f" kernel CPU {bare['sys_s']:.3f} s) — artifacts cost {1e6 / rate - 1e6 / bare_rate:,.0f} µs per trial"
    )

    if not args.no_cli:
        cli = _cli_run(args.cases, args.cpu, side)
        cli_rate = args.cases / float(cli["wall_s"])
        print(
            f"   same run via `anpord eval` > /dev/null: {cli['wall_s']:.3f} s wall incl. start-up"
            f" ({cli_rate:,.0f} trials/s), exit {cli['exit_code']},"
            f" peak RSS {_mb(cli['children_max_rss_kb']):.1f} MB"
        )

    parked = _child("parked", args.parked, args.cpu, side)
    at = parked.get("at_parked") or {}
    peak_mb = _mb(parked["peak_rss_kb"])
    print()
    print(
        f"2. {args.parked:,} sessions parked at once in request_input (max_concurrency {parked['max_concurrency']})"
    )
    print(
        f"   totals: {parked['totals']}  exit {parked['exit_code']}  execute: {parked['execute_s']:.3f} s"
    )
    if at:
        delta = (float(at["vm_rss_kb"]) - float(parked["rss_before_kb"])) / args.parked
        print(
            f"   RSS with all {at['parked']:,} parked: {_mb(at['vm_rss_kb']):.1f} MB"
            f" (before the run {_mb(parked['rss_before_kb']):.1f} MB; ≈{delta:.1f} KB per parked session)"
        )
    else:
        print("   the cases never all parked: no RSS reading at the parked moment")
    print(
        f"   peak RSS: {peak_mb:.1f} MB   target ≤ {TARGET_PARKED_MB:.0f} MB   ratio {peak_mb / TARGET_PARKED_MB:.2f}×"
        f"   {'MET' if peak_mb <= TARGET_PARKED_MB else 'MISSED'}"
    )
    return 0


def _compared(args: argparse.Namespace) -> int:
    """Every scenario for every side (``--against``, ``--loops``), interleaved: figures side by side."""
    n = args.cases
    with sides(args) as columns:
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, pinned to one core per scenario;"
              f" load {os.getloadavg()[0]:.2f}; fastest of {args.repeat} interleaved runs per side")
        print(f"sides: {describe(columns)}")

        def scenario(kind: str) -> Callable[[Side], dict[str, Any]]:
            def run(side: Side) -> dict[str, Any]:
                _loop_check(side)
                if kind == "cli":
                    return _cli_run(n, args.cpu, side)
                return _child(kind, args.parked if kind == "parked" else n, args.cpu, side)
            return run

        kinds = ["trials", "trials-nohist", "trials-noart"] + ([] if args.no_cli else ["cli"])
        kinds += [] if args.no_parked else ["parked"]
        got = interleaved(columns, args.repeat, {k: scenario(k) for k in kinds})
        print(f"load after: {os.getloadavg()[0]:.2f}")

        def each(kind: str, figure: Callable[[dict[str, Any]], float]) -> list[float | str | None]:
            """``figure`` of each side's fastest run of ``kind``."""
            return [figure(r) if isinstance(r, dict) else "n/a" for r in (fastest(x) for x in got[kind])]

        def cpu(kind: str) -> list[float | str | None]:
            """Each side's least CPU time per trial (user+sys) over its runs of ``kind``."""
            return [least(x, lambda r: 1e6 * r["cpu_s"] / n) for x in got[kind]]

        print()
        print(heading(columns))
        print(f"  1. {n:,} trivial trials, runner API, one core")
        print(row("trials/s, artifacts + store", each("trials", lambda r: n / r["wall_s"])))
        print(row("  CPU µs per trial (user+sys)", cpu("trials")))
        print(row("  wall µs per trial", each("trials", lambda r: 1e6 * r["wall_s"] / n)))
        print(row("trials/s, store off", each("trials-nohist", lambda r: n / r["wall_s"])))
        print(row("  CPU µs per trial", cpu("trials-nohist")))
        share = [1 - o["wall_s"] / s["wall_s"] if isinstance(s, dict) and isinstance(o, dict) else "n/a"
                 for s, o in zip(map(fastest, got["trials"]), map(fastest, got["trials-nohist"]))]
        print(row("store's share of the wall", share, "{:.1%}"))
        cpu_share = [1 - o / s if isinstance(s, float) and isinstance(o, float) else "n/a"
                     for s, o in zip(cpu("trials"), cpu("trials-nohist"))]
        print(row("  … of the CPU", cpu_share, "{:.1%}"))
        print(row("  writer thread, CPU µs per trial",
                  [least(x, lambda r: 1e6 * r.get("writer_cpu_s", float("nan")) / n) for x in got["trials"]]))
        print(row("trials/s, artifacts off", each("trials-noart", lambda r: n / r["wall_s"])))
        print(row("  CPU µs per trial", cpu("trials-noart")))
        if "cli" in got:
            print(row("`anpord eval` wall s (start-up incl.)", each("cli", lambda r: r["wall_s"]), "{:.3f}"))
            print(row("  CPU µs per trial", cpu("cli")))
        if "parked" in got:
            print(f"  2. {args.parked:,} parked sessions")
            print(row("peak RSS MB", each("parked", lambda r: _mb(r["peak_rss_kb"])), "{:.1f}"))
            print(row("execute s", each("parked", lambda r: r["execute_s"]), "{:.3f}"))
        for kind, results in got.items():
            for side, r in zip(columns, map(fastest, results)):
                if isinstance(r, str):
                    print(f"  note: {kind}, {side.label}: not run — {r}")
                elif r.get("exit_code") not in (0, None):
                    print(f"  note: {kind}, {side.label}: exit {r['exit_code']} (totals {r.get('totals')})")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--cases", type=int, default=10_000, help="trivial cases for the trials/s figure"
    )
    ap.add_argument("--parked", type=int, default=1_000, help="sessions parked at once")
    ap.add_argument(
        "--cpu", type=int, default=None, help="core to pin to (default: the last allowed)"
    )
    ap.add_argument("--no-cli", action="store_true", help="skip the CLI run")
    ap.add_argument("--no-parked", action="store_true", help="skip the parked sessions (with --against/--loops)")
    add_arguments(ap)
    ap.add_argument("--child", choices=["trials", "trials-nohist", "trials-noart", "trials-free", "trials-nohist-free",
                                        "parked"],
                    help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.child:
        print(json.dumps(_scenario(args.child, args.n, args.cpu)))
        return 0
    if args.against or args.loops:
        return _compared(args)
    return _single(args)


if __name__ == "__main__":
    sys.exit(main())
