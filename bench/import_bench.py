"""Import speed: a generated 10,000-case evals.json through ``anpord eval import``, then the
suite it wrote through ``anpord eval --list``; then a directory of 10,000 YAML case files through
``anpord eval import --format yaml``.

    python bench/import_bench.py [--cases 10000] [--runs 5] [--only evals-json|yaml]

Each command runs in a fresh subprocess (the installed ``anpord`` console script, so the figure
includes the interpreter's start-up); the figure is the median wall time of ``--runs`` runs after
one warm-up run, with the median CPU time (user + system) beside it, which a busy machine
disturbs less. Targets: import ≤ 0.5 s, ``--list`` ≤ 1 s. Also printed: the import alone,
in-process (``anpord.importers.import_cases``), without start-up.

The cases mix what real files hold: two structured assertions and one prose assertion per case,
every tenth case with no assertions, every third naming a fixture directory, an expected output.
The YAML files are shaped like browser-agent suites: a name, a task (every third a ``|`` block),
two judge lines, ``max_steps`` on most, a field the format does not define on some, and a mix of
``.yaml`` and ``.yml``. For them the YAML parser in use is printed too (PyYAML's C loader, or
its pure-Python one where libyaml is missing), since that is most of the cost.

``--list`` needs the runner; if ``anpord eval --list`` fails, its error is printed instead of a
figure.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

IMPORT_TARGET_S = 0.5
LIST_TARGET_S = 1.0

CONFIG = "from anpord import define_eval_config\n\nconfig = define_eval_config()\n"


def case(i: int) -> dict[str, object]:
    assertions: list[object] = [
        {
            "text": "names the removed flag",
            "kind": "content_contains_all",
            "needles": ["--legacy", f"v{i}"],
        },
        {
            "text": "does not invent a version",
            "kind": "content_contains_none",
            "needles": ["v99.0.0"],
        },
        "The summary reads as though a maintainer wrote it.",
    ]
    return {
        "id": i,
        "name": f"Release notes for version {i}",
        "prompt": f"Read CHANGELOG.md and write the release notes for v{i}.\nMind the `$` sign.",
        "expected_output": "A short note naming the breaking change.",
        "files": [f"fixtures/release-{i}"] if i % 3 == 0 else [],
        "assertions": [] if i % 10 == 0 else assertions,
    }


def yaml_case(i: int) -> str:
    task = (
        f"task: |\n  Open the demo storefront and find order {i}.\n  Report its status.\n"
        if i % 3 == 0
        else f"task: Open the demo storefront and find order {i}, then report its status\n"
    )
    return (
        f"# Order lookup {i}\n"
        f"name: Order lookup {i}\n"
        f"{task}"
        "judge_context:\n"
        "  - The agent must open the orders page before answering\n"
        f'  - "The answer names order {i} and its status"\n'
        + ("" if i % 4 == 0 else "max_steps: 12\n")
        + ("expected_substrings: [shipped, delivered]\n" if i % 5 == 0 else "")
    )


def anpord() -> str:
    beside = Path(sys.executable).with_name("anpord")
    return str(beside) if beside.exists() else "anpord"


def child_env() -> dict[str, str]:
    """The environment for the timed commands: this anpord's own source first on the path, so
    the command runs the same code the in-process figure measured (a relative PYTHONPATH would
    not survive the change of folder)."""
    import anpord

    source = str(Path(anpord.__file__).resolve().parents[1])
    path = os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")]))
    return {**os.environ, "NO_COLOR": "1", "PYTHONPATH": path}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(
    argv: list[str], cwd: Path, env: dict[str, str], runs: int
) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Median wall time and median CPU time (user + system) of the command's runs. On a busy
    machine the CPU time is the steadier figure: it leaves out time spent waiting for a core."""
    # One warm-up run first, so every timed run finds its bytecode cached.
    last = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    walls, cpus = [], []
    for _ in range(runs):
        cpu, start = _cpu(), time.perf_counter()
        last = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
        walls.append(time.perf_counter() - start)
        cpus.append(_cpu() - cpu)
        if last.returncode != 0:
            break
    return statistics.median(walls), statistics.median(cpus), last


def verdict(wall: float, cpu: float, target: float) -> str:
    met = "met" if wall <= target else "MISSED"
    return f"{wall:.3f} s wall, {cpu:.3f} s CPU (target ≤ {target:g} s: {met})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", choices=("evals-json", "yaml"), default=None)
    args = parser.parse_args()
    if args.only != "yaml" and evals_json_bench(args) != 0:
        return 1
    if args.only != "evals-json":
        return yaml_bench(args)
    return 0


def yaml_parser() -> str:
    import yaml  # type: ignore[import-untyped]

    return "C loader (libyaml)" if getattr(yaml, "__with_libyaml__", False) else "pure Python"


def yaml_bench(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="anpord-import-bench-") as folder:
        root = Path(folder)
        cases = root / "cases"
        cases.mkdir()
        for i in range(args.cases):
            suffix = ".yml" if i % 7 == 0 else ".yaml"
            (cases / f"order-{i:05d}{suffix}").write_text(yaml_case(i), encoding="utf-8")
        env = child_env()
        print(
            f"\n{args.cases:,} yaml case files in one directory, median of {args.runs} runs; "
            f"PyYAML {yaml_parser()} available"
        )

        from anpord.importers import import_cases

        start = time.perf_counter()
        suite = import_cases("yaml", str(cases))
        in_process = time.perf_counter() - start
        print(
            f"import, in-process:            {in_process:.3f} s "
            f"({len(suite.source) / 1e6:.1f} MB of suite)"
        )
        argv = [anpord(), "eval", "import", "--format", "yaml", "cases", "--out", "x.eval.py"]
        wall, cpu, done = timed([*argv, "--force"], root, env, args.runs)
        if done.returncode != 0:
            print(f"anpord eval import failed (exit {done.returncode}): {done.stderr.strip()}")
            return 1
        print(f"anpord eval import --format yaml: {wall:.3f} s wall, {cpu:.3f} s CPU")
    return 0


def evals_json_bench(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="anpord-import-bench-") as folder:
        root = Path(folder)
        (root / "evals").mkdir()
        (root / "evals" / "evals.config.py").write_text(CONFIG)
        data = {"skill_name": "release notes", "evals": [case(i) for i in range(args.cases)]}
        (root / "evals.json").write_text(json.dumps(data, indent=2), encoding="utf-8")
        env = child_env()
        size = (root / "evals.json").stat().st_size

        print(f"{args.cases:,} cases, evals.json {size / 1e6:.1f} MB, median of {args.runs} runs")

        from anpord.importers import import_cases

        start = time.perf_counter()
        suite = import_cases("evals-json", str(root / "evals.json"))
        in_process = time.perf_counter() - start
        print(
            f"import, in-process:            {in_process:.3f} s "
            f"({len(suite.source) / 1e6:.1f} MB of suite)"
        )

        out = "evals/imported.eval.py"
        wall, cpu, done = timed(
            [
                anpord(),
                "eval",
                "import",
                "--format",
                "evals-json",
                "evals.json",
                "--out",
                out,
                "--force",
            ],
            root,
            env,
            args.runs,
        )
        if done.returncode != 0:
            print(f"anpord eval import failed (exit {done.returncode}): {done.stderr.strip()}")
            return 1
        print(f"anpord eval import:            {verdict(wall, cpu, IMPORT_TARGET_S)}")

        # The first listing compiles the 10,000-case module and caches the code; later ones reuse it.
        start = time.perf_counter()
        first_run = subprocess.run(
            [anpord(), "eval", "--list", out],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        cold = time.perf_counter() - start
        if first_run.returncode == 0:
            met = "met" if cold <= LIST_TARGET_S else "MISSED"
            print(
                f"anpord eval --list, first run: {cold:.3f} s wall (target ≤ {LIST_TARGET_S:g} s: {met})"
            )
        wall, cpu, done = timed([anpord(), "eval", "--list", out], root, env, args.runs)
        if done.returncode != 0:
            first = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[0]
            print(
                f"anpord eval --list:            not measured: it exits {done.returncode}: {first}"
            )
            return 0
        listed = sum(1 for line in done.stdout.splitlines() if line.startswith("imported/"))
        print(
            f"anpord eval --list, cached:    {verdict(wall, cpu, LIST_TARGET_S)} ({listed:,} cases listed)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
