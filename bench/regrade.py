"""Regrade and workspace snapshots: what deciding a run again costs against running it again, and
what keeping each trial's workspace costs in disk.

    python bench/regrade.py [--n 1000] [--conc 100] [--latencies 2,0.05] [--snapshot-trials 1000]
                            [--skip-regrade] [--skip-snapshots]

1. **regrade vs re-run**: for each model latency, a temp project of N single-turn cases through
   the ``openai:`` harness against the scripted model server (``python -m
   anpord.testing.model_server --latency L``), ``max_concurrency=C``. ``anpord eval`` runs it
   (the re-run's cost: every agent turn waits for the model), then ``anpord regrade latest``
   decides the same run again from its recording. Both are timed as subprocesses, start-up
   included. Targets: at 2 s, regrade ≥ 10× faster; at 50 ms, ≥ 2×.
2. **snapshot size**: a coding-style run — a 200-file fixture (``directory()`` source), a command
   agent that edits 2 of its files (a line unique to the trial appended to each) — run with and
   without ``--no-snapshots``; the run folders' sizes compared. Target: ≤ 10 % larger.

Wall times are what the targets are about; each command's CPU time is printed beside it, a
figure that holds on a machine busy with other work. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
sys.path.insert(0, str(SRC))

CONFIG = """
from anpord import define_eval_config, Variant

config = define_eval_config(
    harness="openai:bench-model", max_concurrency={conc}, timeout=300,
    variants=[Variant(harness="openai:bench-model", env={{"OPENAI_BASE_URL": {url!r}}},
                      options={{"max_connections": {conc}}})],
)
"""

EVAL = """
from anpord import define_eval
from anpord.expect import includes


@define_eval(each=range({n}))
async def test(t, row):
    await t.send(f"ping {{row}}")
    t.check(t.reply, includes("ping"))
"""

CODING_CONFIG = """
from anpord import define_eval_config, Variant

AGENT = ("printf 'edit %s\\\\n' \\"$ANPORD_SESSION_ID\\" >> src/mod003.py; "
         "printf 'edit %s\\\\n' \\"$ANPORD_SESSION_ID\\" >> src/mod007.py; echo edited")
config = define_eval_config(max_concurrency={conc}, timeout=60,
                            variants=[Variant(name="cli", harness="command:" + AGENT)])
"""

CODING_EVAL = """
from anpord import define_eval, directory
from anpord.verifiers import command


test = define_eval(each=range({n}), prompt="fix mod003 and mod007", source=directory("fixture"),
                   validate=command("grep -q edit src/mod003.py && grep -q edit src/mod007.py"))
"""


# The CLI runs find their bytecode cached, as an installed package does (in a temporary folder:
# nothing is written into the source tree), whatever PYTHONDONTWRITEBYTECODE says.
PYCACHE = tempfile.mkdtemp(prefix="anpord-regrade-pycache-")


def env() -> dict[str, str]:
    out = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])),
               NO_COLOR="1", PYTHONPYCACHEPREFIX=PYCACHE)
    out.pop("PYTHONDONTWRITEBYTECODE", None)
    return out


CPU: list[float] = [0.0]  # CPU seconds (user + system) of the last anpord subprocess


def anpord(folder: Path, *args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "anpord", *args], cwd=folder, env=env(),
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU[0] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return time.perf_counter() - t0, proc


def last_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if " passed" in line]
    return lines[-1].strip() if lines else (proc.stderr.strip().splitlines() or ["?"])[-1]


def start_server(latency: float) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-m", "anpord.testing.model_server", "--latency", str(latency),
                             "--no-record"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env())
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def stop_server(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(timeout=10)


def regrade_vs_rerun(n: int, conc: int, latency: float) -> None:
    server, url = start_server(latency)
    try:
        with tempfile.TemporaryDirectory(prefix="anpord-regrade-bench-") as tmp:
            folder = Path(tmp)
            (folder / "evals").mkdir()
            (folder / "evals" / "evals.config.py").write_text(CONFIG.format(conc=conc, url=url))
            (folder / "evals" / "ping.eval.py").write_text(EVAL.format(n=n))
            anpord(folder, "eval", "--list")  # warm the bytecode cache
            rerun, proc = anpord(folder, "eval")
            print(f"  anpord eval (re-run):     {rerun:7.2f} s  (CPU {CPU[0]:.2f} s)  {last_line(proc)}")
            regrade, proc = anpord(folder, "regrade", "latest")
            print(f"  anpord regrade latest:    {regrade:7.2f} s  (CPU {CPU[0]:.2f} s)  {last_line(proc)}")
            print(f"  => regrade is {rerun / regrade:.1f}x faster than re-running "
                  f"(target: {'10' if latency >= 1 else '2'}x)")
    finally:
        stop_server(server)


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def snapshot_size(n: int, conc: int) -> None:
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="anpord-snapshot-bench-") as tmp:
        folder = Path(tmp)
        evals = folder / "evals"
        src = evals / "fixture" / "src"
        src.mkdir(parents=True)
        for i in range(200):  # a small code base: 200 modules of 40-120 lines
            lines = [f"def f{i}_{j}(x):\n    return x * {rng.randint(1, 999)} + {rng.randint(1, 999)}\n"
                     for j in range(rng.randint(20, 60))]
            (src / f"mod{i:03d}.py").write_text("".join(lines))
        fixture = folder_size(evals / "fixture")
        (evals / "evals.config.py").write_text(CODING_CONFIG.format(conc=conc))
        (evals / "coding.eval.py").write_text(CODING_EVAL.format(n=n))
        sizes = {}
        for flag in ("--no-snapshots", None):
            took, proc = anpord(folder, "eval", *([flag] if flag else []))
            runs = sorted((folder / ".anpord" / "runs").iterdir())
            sizes[flag] = folder_size(runs[-1])
            print(f"  {'without' if flag else 'with'} snapshots: run folder {sizes[flag] / 1e6:6.2f} MB "
                  f"({took:.1f} s; {last_line(proc)})")
        kept = folder_size(runs[-1] / "workspaces")
        grew = sizes[None] / sizes["--no-snapshots"] - 1
        print(f"  fixture {fixture / 1e3:.0f} kB, {n} trials; the archive holds {kept / 1e3:.0f} kB "
              f"({kept / n:.0f} B a trial)")
        print(f"  => the run folder grows {grew * 100:.1f}% with snapshots (target: <= 10%)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--conc", type=int, default=100)
    ap.add_argument("--latencies", default="2,0.05")
    ap.add_argument("--snapshot-trials", type=int, default=1000)
    ap.add_argument("--skip-regrade", action="store_true")
    ap.add_argument("--skip-snapshots", action="store_true")
    args = ap.parse_args()
    if not args.skip_regrade:
        for latency in (float(x) for x in args.latencies.split(",")):
            print(f"regrade vs re-run: {args.n} trials, C={args.conc}, model latency {latency:g} s")
            regrade_vs_rerun(args.n, args.conc, latency)
    if not args.skip_snapshots:
        print(f"workspace snapshots: {args.snapshot_trials} coding trials, 2 files edited of 200")
        snapshot_size(args.snapshot_trials, 8)


if __name__ == "__main__":
    main()
