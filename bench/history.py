"""Run history figures: `anpord runs` over 500 stored runs, `anpord compare` of two 10,000-trial
runs, and what filing a run in the store costs the runner.

    python bench/history.py [--runs 500] [--trials 10000] [--repeat 3] [--skip-overhead]

Figures (printed, not asserted):

1. ``anpord runs`` with 500 runs in the store (each 20 trials), wall time of the command in a
   fresh process (median of 5). Target ≤ 0.5 s.
2. ``anpord compare A B`` of two 10,000-trial runs (10,000 cells, half of them changed), wall
   time in a fresh process (median of 5). Target ≤ 1 s.
3. Runner overhead: ``bench/runner_overhead.py``'s 10,000 trivial trials with the store on and
   off (alternating, ``--repeat`` times each; the median execute time and CPU of each), with an
   existing store (the steady state: filing goes through the database driver alone). Target: the
   store costs < 5%.

Runs are written as real run folders (run.json + results.jsonl, as the runner writes them) and
filed with ``anpord db rebuild``, so the store holds what a project's history would.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
sys.path.insert(0, str(SRC))

from anpord.results import CellRecord, EventsRef, RunRecord, TrialResult, summarize_cell
from anpord.results._encode import encode


def _env() -> dict[str, str]:
    env = {**os.environ, "NO_COLOR": "1"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    env.pop("ANPORD_DB", None)
    return env


def write_run(
    project: Path, run_id: str, started: float, n_cells: int, trials: int, flip: int
) -> None:
    """A finished run folder: ``n_cells`` cells of ``trials`` trials; cells below ``flip`` fail."""
    run_dir = project / ".anpord" / "runs" / run_id
    run_dir.mkdir(parents=True)
    label = "python:agents.a:agent/default"
    results, cells = [], []
    for i in range(n_cells):
        rs = [
            TrialResult(
                f"suite/{i:05d}",
                label,
                k,
                "failed" if i < flip else "passed",
                duration=0.01,
                started_at=started,
                events=EventsRef(0, 0, 0),
            )
            for k in range(trials)
        ]
        results += rs
        cells.append(
            CellRecord(
                f"suite/{i:05d}",
                label,
                trials,
                60.0,
                "/x/suite.eval.py",
                f"{i:016x}",
                summary=summarize_cell(rs),
            )
        )
    totals = {
        "trials": len(results),
        "passed": sum(r.verdict == "passed" for r in results),
        "failed": sum(r.verdict == "failed" for r in results),
    }
    record = RunRecord(
        run_id=run_id,
        status="finished",
        started_at=started,
        finished_at=started + 5,
        owner={"host": "bench"},
        variants=[{"label": label, "harness": "python:agents.a:agent"}],
        cells=cells,
        totals=totals,
    )
    (run_dir / "run.json").write_bytes(encode(record.to_dict()))
    (run_dir / "results.jsonl").write_bytes(b"".join(encode(r.to_dict()) + b"\n" for r in results))
    (run_dir / "events.ndjson").write_bytes(b"")


def project(name: str) -> Path:
    folder = Path(tempfile.mkdtemp(prefix=f"anpord-bench-{name}-"))
    (folder / "evals").mkdir()
    (folder / "evals" / "evals.config.py").write_text(
        "from anpord import define_eval_config\nconfig = define_eval_config()\n"
    )
    return folder


def timed(
    folder: Path, *args: str, times: int = 5
) -> tuple[float, subprocess.CompletedProcess[str]]:
    walls, proc = [], None
    for _ in range(times + 1):
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "anpord", *args],
            cwd=folder,
            env=_env(),
            capture_output=True,
            text=True,
            check=False,
        )
        walls.append(time.perf_counter() - t0)
    assert proc is not None
    return statistics.median(walls[1:]), proc


def rebuild(folder: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "anpord", "db", "rebuild"],
        cwd=folder,
        env=_env(),
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - t0


def overhead(trials: int, repeat: int) -> None:
    here = Path(__file__).parent / "runner_overhead.py"
    figures: dict[str, list[dict[str, float]]] = {"trials": [], "trials-nohist": []}
    for _ in range(repeat):
        for kind in figures:
            out = subprocess.run(
                [sys.executable, str(here), "--child", kind, "--n", str(trials)],
                env=_env(),
                capture_output=True,
                text=True,
                check=True,
            )
            figures[kind].append(json.loads(out.stdout.strip().splitlines()[-1]))
    med = {
        k: {f: statistics.median(x[f] for x in v) for f in ("execute_s", "user_s", "sys_s")}
        for k, v in figures.items()
    }
    on, off = med["trials"], med["trials-nohist"]
    print(
        f"3. runner overhead, {trials:,} trivial trials, median of {repeat} alternating runs each"
    )
    for name, m in (("store on ", on), ("store off", off)):
        print(
            f"   {name}: execute {m['execute_s']:.3f} s ({trials / m['execute_s']:,.0f} trials/s), "
            f"CPU user {m['user_s']:.3f} s + kernel {m['sys_s']:.3f} s"
        )
    wall = on["execute_s"] / off["execute_s"] - 1
    cpu = (on["user_s"] + on["sys_s"]) / (off["user_s"] + off["sys_s"]) - 1
    print(
        f"   the store costs {wall:+.1%} wall, {cpu:+.1%} CPU   target < 5%   "
        f"{'MET' if wall < 0.05 else 'MISSED'} (wall)"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=500)
    ap.add_argument("--trials", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-overhead", action="store_true")
    args = ap.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus")

    many = project("runs")
    try:
        base = time.time() - args.runs * 60
        for i in range(args.runs):
            write_run(many, f"20250101-{i:06d}-{i:06x}", base + i * 60, 10, 2, flip=i % 3)
        took = rebuild(many)
        wall, proc = timed(many, "runs")
        print(
            f"1. `anpord runs` over {args.runs} stored runs (20 trials each): {wall:.3f} s   target ≤ 0.5 s"
            f"   {'MET' if wall <= 0.5 else 'MISSED'}   (exit {proc.returncode}; filing them took {took:.1f} s)"
        )
    finally:
        shutil.rmtree(many, ignore_errors=True)

    two = project("compare")
    try:
        now = time.time()
        write_run(two, "20250101-000001-aaaaaa", now - 100, args.trials, 1, flip=0)
        write_run(two, "20250101-000002-bbbbbb", now - 50, args.trials, 1, flip=args.trials // 2)
        rebuild(two)
        wall, proc = timed(two, "compare", "20250101-000001-aaaaaa", "20250101-000002-bbbbbb")
        print(
            f"2. `anpord compare` of two {args.trials:,}-trial runs: {wall:.3f} s   target ≤ 1 s"
            f"   {'MET' if wall <= 1.0 else 'MISSED'}   ({proc.stdout.strip().splitlines()[-1]})"
        )
    finally:
        shutil.rmtree(two, ignore_errors=True)

    if not args.skip_overhead:
        overhead(args.trials, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
