"""Statistics figures: false alarms of ``--fail-on regressed`` on real runs of an unchanged agent,
and what the statistics cost a run and the CLI.

    python bench/regressions.py [--runs 20] [--cases 50] [--trials 3] [--rate 0.9]
                               [--compare-src PATH] [--repeat 5] [--skip-alarms] [--skip-speed]

Figures (printed, not asserted):

1. **False alarms.** A ``--cases``-case suite against an agent that passes each trial with
   probability ``--rate`` (a real Python agent drawing from ``random``; nothing about it changes
   between runs), ``--trials`` trials a case. The first run is the baseline; each of the next
   ``--runs`` runs is ``anpord eval --fail-on regressed``. Printed: how many held (exit 0), the
   cells and variants reported regressed, and the figure the old rule (a cell regressed when its
   pass rate dropped by ≥ 0.2, or it lost determinism) would have given on the same runs.
   Target: the gate holds in ≥ 95% of runs.
2. **Speed.** ``anpord --help`` (median of ``--repeat`` fresh processes) and a 10,000-trial run
   (``bench/runner_overhead.py``'s trials scenario: trials per second and CPU time a trial), for this
   checkout and, with ``--compare-src``, for another checkout's ``src`` (say the main branch),
   alternating so that machine load falls on both alike. Target: no slower.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"

AGENT = """
import random


async def agent(turn):
    rate = float(__import__("os").environ.get("PASS_RATE", "0.9"))
    return "ok" if random.random() < rate else "nope"
"""

CONFIG = """from anpord import define_eval_config

config = define_eval_config(harness="python:agents.coin:agent", trials={trials}, timeout=20)
"""

EVAL = """from anpord import define_eval
from anpord.expect import equals


@define_eval(each=list(range({cases})))
async def test(t, row):
    await t.send(str(row))
    t.check(t.reply, equals("ok"))
"""


def _env(src: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "NO_COLOR": "1", **extra}
    env["PYTHONPATH"] = str(src)
    env.pop("ANPORD_DB", None)
    return env


def _eval(project: Path, *args: str, rate: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "anpord", "eval", "--json", *args],
        cwd=project, env=_env(SRC, PASS_RATE=str(rate)), capture_output=True, text=True,
        timeout=600, check=False,
    )


def _old_rule(base: dict[str, dict], cand: list[dict]) -> int:
    """Cells the retired rule would have called regressed: a drop of ≥ 0.2, or a cell that was
    deterministic and is not, without its pass rate rising."""
    n = 0
    for c in cand:
        b = base.get(c["case_id"])
        if b is None or b["pass_rate"] is None or c["pass_rate"] is None:
            continue
        delta = c["pass_rate"] - b["pass_rate"]
        if delta <= -0.2 + 1e-9 or (b["deterministic"] and not c["deterministic"] and delta <= 1e-9):
            n += 1
    return n


def false_alarms(runs: int, cases: int, trials: int, rate: float) -> None:
    with tempfile.TemporaryDirectory(prefix="anpord-stats-") as tmp:
        project = Path(tmp)
        (project / "agents").mkdir()
        (project / "agents" / "coin.py").write_text(AGENT)
        (project / "evals").mkdir()
        (project / "evals" / "evals.config.py").write_text(CONFIG.format(trials=trials))
        (project / "evals" / "coin.eval.py").write_text(EVAL.format(cases=cases))
        first = _eval(project, "--fail-on", "never", rate=rate)
        base_doc = json.loads(first.stdout)
        base = {c["case_id"]: c for c in base_doc["cells"]}
        held = cell_alarms = variant_alarms = old_failed = old_cells = 0
        started = time.perf_counter()
        for i in range(runs):
            proc = _eval(project, "--fail-on", "regressed", rate=rate)
            doc = json.loads(proc.stdout)
            cmp = doc["comparison"] or {}
            held += proc.returncode == 0
            cell_alarms += len(cmp.get("regressed", []))
            variant_alarms += sum(v["status"] == "regressed" for v in cmp.get("variants", []))
            old = _old_rule(base, doc["cells"])
            old_cells += old
            old_failed += old > 0
            print(f"  run {i + 1:>2}: exit {proc.returncode}, {len(cmp.get('regressed', []))} "
                  f"cells / {sum(v['status'] == 'regressed' for v in cmp.get('variants', []))} "
                  f"variants regressed; old rule: {old} cells", flush=True)
        took = time.perf_counter() - started
        print(f"false alarms ({cases} cases at p = {rate}, {trials} trials, unchanged agent, "
              f"{runs} runs against the first, {took:.0f}s):")
        print(f"  --fail-on regressed held in {held} of {runs} runs ({held / runs:.0%}; target ≥ 95%)"
              f": {cell_alarms} cells and {variant_alarms} variants reported regressed in all")
        print(f"  the retired rule would have failed {old_failed} of {runs} runs "
              f"({old_cells} cells called regressed in all)")


def _help_time(src: Path) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "anpord", "--help"], env=_env(src),
                   capture_output=True, check=True)
    return time.perf_counter() - started


def _run_figures(src: Path) -> tuple[float, float]:
    """(trials per second of wall time, CPU µs per trial) of a 10,000-trial run: the runner API
    on trivial cases, as ``bench/runner_overhead.py`` times it. CPU time is the steadier figure
    on a loaded machine."""
    proc = subprocess.run(
        [sys.executable, str(HERE / "runner_overhead.py"), "--child", "trials", "--n", "10000"],
        env=_env(src), capture_output=True, text=True, timeout=1200, check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"runner_overhead.py failed:\n{proc.stderr[-2000:]}")
    d = json.loads(proc.stdout.strip().splitlines()[-1])
    return d["n"] / d["execute_s"], (d["user_s"] + d["sys_s"]) / d["n"] * 1e6


def speed(repeat: int, other: Path | None) -> None:
    sources = {"this checkout": SRC, **({"compared": other} if other else {})}
    helps: dict[str, list[float]] = {k: [] for k in sources}
    for _ in range(repeat):  # alternate: machine load falls on both alike
        for name, src in sources.items():
            helps[name].append(_help_time(src))
    for name, times in helps.items():
        print(f"anpord --help, {name}: median {statistics.median(times) * 1000:.0f} ms "
              f"of {repeat}")
    runs: dict[str, list[tuple[float, float]]] = {k: [] for k in sources}
    for _ in range(max(1, repeat // 2)):
        for name, src in sources.items():
            runs[name].append(_run_figures(src))
    for name, values in runs.items():
        rate = statistics.median(v[0] for v in values)
        cpu = statistics.median(v[1] for v in values)
        print(f"10,000-trial run, {name}: median {rate:,.0f} trials/s, {cpu:,.0f} µs CPU a "
              f"trial, of {len(values)}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--cases", type=int, default=50)
    p.add_argument("--trials", type=int, default=3)
    p.add_argument("--rate", type=float, default=0.9)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--compare-src", type=Path, help="another checkout's src folder to time beside")
    p.add_argument("--skip-alarms", action="store_true")
    p.add_argument("--skip-speed", action="store_true")
    args = p.parse_args()
    if not args.skip_alarms:
        false_alarms(args.runs, args.cases, args.trials, args.rate)
    if not args.skip_speed:
        speed(args.repeat, args.compare_src)


if __name__ == "__main__":
    main()
