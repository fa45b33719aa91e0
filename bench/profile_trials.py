"""Where a trivial trial's CPU goes, and how source trees compare on it.

    python bench/profile_trials.py [--cases 3000] [--rounds 3] [TREE ...]   # A/B, interleaved
    python bench/profile_trials.py --profile [--cases 5000] [--top 40]      # cProfile + counts

The trivial run is ``bench/runner_overhead.py``'s: one eval file fanned out with ``each=`` over
an echo Python agent, one ``includes`` check, artifacts and the run store on, runner API, no
reporter, ``max_concurrency=8``, one core.

**A/B** (default): each TREE is a checkout of this project (its ``src`` goes first on
``PYTHONPATH``; default: this one). Every round runs one child process per tree, in turn, so load
drifts hit every tree alike; printed is each tree's median CPU (user + kernel) per trial while
``execute`` runs, and its ratio to the first tree's.

**Profile** (``--profile``): one run in this process under cProfile, the top functions by own time,
and per trial: tasks created and loop callbacks run.

``--body CODE`` replaces the test's body (indented four spaces), e.g. ``--body '    pass'`` for
the cost of a trial with no turn at all; ``--cpu N`` pins to core N (default: the last allowed).
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
from typing import Any

from _against import Side, compiled

HERE = Path(__file__).resolve().parents[1]

AGENT = """
async def agent(turn):
    return turn.input
"""

CONFIG = """
from anpord import define_eval_config

config = define_eval_config(harness="python:bench_agents.agent:agent", max_concurrency=8, timeout=300)
"""

TRIVIAL_EVAL = """
from anpord import define_eval
from anpord.expect import includes


@define_eval(each=range({n}))
async def test(t, row):
{body}
"""

BODY = """    await t.send(f"ping {{row}}")
    t.check(t.reply, includes("ping"))"""


def _project(n: int, history: bool) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="anpord-profile-"))
    (folder / "evals").mkdir()
    (folder / "bench_agents").mkdir()
    (folder / "bench_agents" / "__init__.py").write_text("")
    (folder / "bench_agents" / "agent.py").write_text(AGENT)
    (folder / "evals" / "evals.config.py").write_text(CONFIG)
    (folder / "evals" / "trivial.eval.py").write_text(TRIVIAL_EVAL.format(n=n, body=os.environ.get("PROFILE_BODY", BODY)))
    if history:  # the store exists already, made by another process (as runner_overhead does)
        subprocess.run([sys.executable, "-c", "import sys; from anpord.store import open_store; "
                        "open_store(sys.argv[1]).close()", str(folder)], check=True,
                       env={**os.environ})
    return folder


def _pin() -> None:
    if hasattr(os, "sched_setaffinity"):
        cpu = os.environ.get("PROFILE_CPU")
        os.sched_setaffinity(0, {int(cpu) if cpu else max(os.sched_getaffinity(0))})


def _plan(folder: Path, artifacts: bool, history: bool) -> tuple[Any, Any]:
    from anpord.runner import RunOptions, build_plan, find_project, load_cases, select_files

    os.chdir(folder)
    project = find_project([])
    opts = RunOptions(artifacts=artifacts, history=history)
    return build_plan(project, load_cases(select_files(project, [])), opts), opts


def _child(n: int, artifacts: bool, history: bool) -> dict[str, Any]:
    _pin()
    folder = _project(n, history)
    try:
        from anpord.runner import execute

        plan, opts = _plan(folder, artifacts, history)
        before, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        summary = execute(plan, opts, reporters=[]).summary
        wall, after = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF)
        import anpord

        return {"src": anpord.__file__, "totals": summary.totals, "wall_s": wall,
                "cpu_s": after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime}
    finally:
        os.chdir("/")
        shutil.rmtree(folder, ignore_errors=True)


def _run_child(tree: Path, n: int, artifacts: bool, history: bool) -> dict[str, Any]:
    # Its modules read from a bytecode cache, as an installed package's are (see _against).
    env = Side(str(tree), tree).child_env()
    cmd = [sys.executable, __file__, "--child", "--cases", str(n)]
    cmd += [] if artifacts else ["--no-artifacts"]
    cmd += [] if history else ["--no-history"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: exit {proc.returncode}\n{proc.stderr[-3000:]}")
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    if not out["src"].startswith(str(tree)):
        raise SystemExit(f"{tree}: imported {out['src']} instead")
    return out


def ab(trees: list[Path], n: int, rounds: int, artifacts: bool, history: bool) -> None:
    for tree in trees:
        compiled(Side(str(tree), tree))
    cpu: dict[Path, list[float]] = {t: [] for t in trees}
    wall: dict[Path, list[float]] = {t: [] for t in trees}
    for r in range(rounds):
        for tree in trees if r % 2 == 0 else list(reversed(trees)):
            out = _run_child(tree, n, artifacts, history)
            cpu[tree].append(out["cpu_s"] / n * 1e6)
            wall[tree].append(out["wall_s"] / n * 1e6)
            print(f"  round {r + 1}: {tree}: {cpu[tree][-1]:.0f} µs CPU/trial  "
                  f"{wall[tree][-1]:.0f} µs wall/trial  {out['totals']['passed']} passed", flush=True)
    base = statistics.median(cpu[trees[0]])
    print(f"\n{n:,} trivial trials, artifacts {'on' if artifacts else 'off'}, store "
          f"{'on' if history else 'off'}; medians of {rounds} interleaved rounds; load {os.getloadavg()[0]:.2f}")
    for tree in trees:
        c = statistics.median(cpu[tree])
        print(f"  {str(tree):40} {c:7.0f} µs CPU/trial  {statistics.median(wall[tree]):7.0f} µs wall/trial"
              f"  ×{c / base:.2f}")


def profile(n: int, top: int, artifacts: bool, history: bool) -> None:
    import cProfile
    import pstats
    from asyncio import events

    if not os.environ.get("PYTHONPATH"):
        sys.path.insert(0, str(HERE / "src"))  # this checkout's code, not an installed one
    import anpord
    import anpord._contain as contain
    from anpord.runner import execute

    _pin()
    folder = _project(n, history)
    counts = {"tasks": 0, "callbacks": 0}
    factory = contain.task_factory

    def counting_factory(loop: Any, coro: Any, **kw: Any) -> Any:
        counts["tasks"] += 1
        return factory(loop, coro, **kw)

    run = events.Handle._run

    def counting_run(self: Any) -> None:
        counts["callbacks"] += 1
        run(self)

    contain.task_factory = counting_factory  # type: ignore[assignment]
    events.Handle._run = counting_run  # type: ignore[method-assign]
    try:
        plan, opts = _plan(folder, artifacts, history)
        prof = cProfile.Profile()
        prof.enable()
        execute(plan, opts, reporters=[])
        prof.disable()
    finally:
        events.Handle._run = run  # type: ignore[method-assign]
        contain.task_factory = factory
        os.chdir("/")
        shutil.rmtree(folder, ignore_errors=True)
    print(f"{anpord.__file__}\nper trial: {counts['tasks'] / n:.2f} tasks, {counts['callbacks'] / n:.2f} loop callbacks")
    stats = pstats.Stats(prof)
    stats.sort_stats("tottime").print_stats(top)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trees", nargs="*", type=Path, help="checkouts to compare (default: this one)")
    ap.add_argument("--cases", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--no-artifacts", action="store_true")
    ap.add_argument("--no-history", action="store_true")
    ap.add_argument("--cpu", type=int, help="the core to pin each run to (default: the last allowed)")
    ap.add_argument("--body", help="the test's body instead of one send and one check")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.cpu is not None:
        os.environ["PROFILE_CPU"] = str(args.cpu)
    if args.body is not None:
        os.environ["PROFILE_BODY"] = args.body  # the children read it too
    artifacts = not args.no_artifacts
    history = artifacts and not args.no_history
    if args.child:
        print(json.dumps(_child(args.cases, artifacts, history)))
    elif args.profile:
        profile(args.cases, args.top, artifacts, history)
    else:
        ab([t.resolve() for t in args.trees] or [HERE], args.cases, args.rounds, artifacts, history)
    return 0


if __name__ == "__main__":
    sys.exit(main())
