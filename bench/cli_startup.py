"""CLI start-up: ``anpord --help`` and ``anpord eval --list`` over 100 eval files.

    python bench/cli_startup.py [--runs 11] [--files 100] [--importtime]

Each command runs in a fresh subprocess (the installed ``anpord`` console script, so the figure
includes the interpreter's own start-up); the figure is the median wall time of ``--runs`` runs
after one warm-up run. Target: ≤ 0.25 s for both.

Two settings are timed. **cached**: Python may cache bytecode (``PYTHONDONTWRITEBYTECODE`` unset;
the cache goes to a temporary ``PYTHONPYCACHEPREFIX``, so nothing is written into the source tree)
— what an installed package sees, and the figure compared with the target. **uncached**: every
module compiled from source on every start, as happens when ``PYTHONDONTWRITEBYTECODE=1`` is set
(some containers and CI images set it).

Anchors, quoted from the issue and NOT measured here: inspect-ai's ``--help`` takes 1.5 s and
promptfoo's ``--version`` 1.4 s on the reference machine.

``--importtime`` also prints the ten slowest imports of each command (``python -X importtime``),
the first place to look when a figure misses its target.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = 0.25
ANCHORS = {"inspect-ai --help": 1.5, "promptfoo --version": 1.4}

CONFIG = """from anpord import define_eval_config

config = define_eval_config(harness="python:agents.echo:agent")
"""

EVAL = """from anpord import define_eval
from anpord.expect import includes


@define_eval(tags=["group{group}"])
async def test(t):
    await t.send("case {i}")
    t.check(t.reply, includes("case {i}"))
"""


def make_project(n_files: int) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="anpord-bench-cli-"))
    (folder / "agents").mkdir()
    (folder / "agents" / "__init__.py").write_text("")
    (folder / "agents" / "echo.py").write_text("async def agent(turn):\n    return turn.input\n")
    evals = folder / "evals"
    evals.mkdir()
    (evals / "evals.config.py").write_text(CONFIG)
    for i in range(n_files):
        sub = evals / f"group{i % 10}"
        sub.mkdir(exist_ok=True)
        (sub / f"case_{i:03d}.eval.py").write_text(EVAL.format(i=i, group=i % 10))
    return folder


def command() -> list[str]:
    exe = shutil.which("anpord")
    return [exe] if exe else [sys.executable, "-m", "anpord"]


def environment(cached: bool, prefix: Path) -> dict[str, str]:
    env = {**os.environ, "NO_COLOR": "1"}
    if cached:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(prefix)
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTHONPYCACHEPREFIX", None)
    return env


def time_runs(
    argv: list[str], cwd: Path, runs: int, env: dict[str, str]
) -> tuple[float, list[float], str]:
    first = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, check=False
    )  # warm-up
    if first.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {first.returncode}:\n{first.stderr}")
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(
            argv,
            cwd=cwd,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times, first.stdout


def slowest_imports(
    args: list[str], cwd: Path, env: dict[str, str], top: int = 10
) -> list[tuple[int, int, str]]:
    """(cumulative µs, self µs, module) of the slowest imports, from ``python -X importtime``."""
    code = (
        f"import sys; sys.argv = ['anpord', *{args!r}]; from anpord.cli.main import entry; entry()"
    )
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    rows = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cum_us, name = (part.strip() for part in line[len("import time:") :].split("|"))
        rows.append((int(cum_us), int(self_us), name))
    return sorted(rows, reverse=True)[:top]


def baseline_python(runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=False)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def report(label: str, median: float, times: list[float], compare: bool) -> None:
    line = f"   {label}: median {median:.3f} s (min {min(times):.3f}, max {max(times):.3f})"
    if compare:
        status = "MET" if median <= TARGET_S else "MISSED"
        line += f"   target ≤ {TARGET_S} s   ratio {median / TARGET_S:.2f}×   {status}"
    print(line)
    if compare:
        for anchor, seconds in ANCHORS.items():
            print(f"      vs {anchor} ({seconds} s, quoted): {seconds / median:.1f}× faster")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--files", type=int, default=100)
    ap.add_argument("--importtime", action="store_true", help="print the slowest imports too")
    args = ap.parse_args()

    folder = make_project(args.files)
    prefix = Path(tempfile.mkdtemp(prefix="anpord-bench-pycache-"))
    try:
        cmd = command()
        print(
            f"python {sys.version.split()[0]}; {args.files} eval files;"
            f" median of {args.runs} runs after a warm-up"
        )
        print(f"bare interpreter start-up (`python -c pass`): {baseline_python(args.runs):.3f} s")
        for label, extra in (
            ("anpord --help", ["--help"]),
            (f"anpord eval --list ({args.files} files)", ["eval", "--list"]),
        ):
            print()
            print(label)
            cached_env = environment(True, prefix)
            median, times, out = time_runs([*cmd, *extra], folder, args.runs, cached_env)
            report("cached bytecode", median, times, compare=True)
            u_median, u_times, _ = time_runs(
                [*cmd, *extra], folder, args.runs, environment(False, prefix)
            )
            report("no bytecode cache", u_median, u_times, compare=False)
            if extra[0] == "eval":
                listed = out.strip().splitlines()[-1] if out.strip() else "?"
                print(f"   listed: {listed}")
            if args.importtime or median > TARGET_S:
                print("   slowest imports, cached (cumulative µs, self µs, module):")
                for cum, own, name in slowest_imports(extra, folder, cached_env):
                    print(f"     {cum:>8} {own:>8}  {name}")
        return 0
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(prefix, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
