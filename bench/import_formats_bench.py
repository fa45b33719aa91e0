"""Import speed for the promptfoo and dataset formats.

    python bench/import_formats_bench.py [--tests 1000] [--rows 100000] [--runs 5]

Figures, each the median of ``--runs`` runs after one warm-up:

- a promptfoo config with 1,000 tests × 3 prompts (3,000 cases): vars rendered into each prompt,
  a ``defaultTest`` merged into every test, four assertions a test (icontains, regex, an
  llm-rubric with a var in it, a javascript placeholder). Target ≤ 1 s.
- a 100,000-line JSONL dataset with ``--match includes``, and the same rows as CSV. Target ≤ 3 s.

Each is timed two ways: in-process (``anpord.importers.import_cases``: read, convert, render),
and as ``anpord eval import ... --out`` in a fresh subprocess, which adds the interpreter's
start-up and the write. CPU time (user + system) is printed beside the wall time, since a busy
machine disturbs it less, and each is set against the target (which is wall time on an idle
machine). For scale, the same run first times the evals-json import of
``bench/import_bench.py``'s 10,000 cases in-process (its target: ≤ 0.5 s with start-up), since
on a shared machine every figure moves together.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

PROMPTFOO_TARGET_S = 1.0
DATASET_TARGET_S = 3.0
SRC = Path(__file__).resolve().parents[1] / "src"


def promptfoo_config(folder: Path, tests: int) -> Path:
    lines = [
        "description: generated for the benchmark",
        "prompts:",
        "  - 'Translate to {{ language | lower }}: {{ input }}'",
        "  - 'You are a translator. {{ input }} -> {{ language }}'",
        "  - |",
        "    {% for word in words %}{{ word | upper }} {% endfor %}in {{ language }}",
        "providers: [openai:gpt-4o-mini, openai:gpt-4o]",
        "defaultTest:",
        "  vars: {words: [one, two]}",
        "  assert:",
        "    - {type: not-icontains, value: sorry}",
        "tests:",
    ]
    for i in range(tests):
        lines += [
            f"  - description: case {i}",
            f"    vars: {{language: Lang{i % 7}, input: 'Sentence number {i}', words: [w{i}, x]}}",
            "    options: {disableVarExpansion: true}",
            "    assert:",
            f"      - {{type: icontains, value: 'number {i}'}}",
            "      - {type: regex, value: '^\\w+'}",
            "      - {type: llm-rubric, value: 'Is a faithful {{ language }} translation'}",
            "      - {type: javascript, value: 'output.length < 500'}",
        ]
    path = folder / "promptfooconfig.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def dataset(folder: Path, rows: int) -> tuple[Path, Path]:
    jsonl = folder / "dataset.jsonl"
    with jsonl.open("w", encoding="utf-8") as out:
        for i in range(rows):
            row = {"id": f"q{i}", "question": f"What is {i} plus {i}?", "answer": str(2 * i)}
            out.write(json.dumps(row) + "\n")
    table = folder / "dataset.csv"
    with table.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["id", "question", "answer"])
        for i in range(rows):
            # every tenth cell spans two lines, as exported spreadsheets' do
            question = f"What is {i} plus {i}?" + ("\nShow the sum." if i % 10 == 0 else "")
            writer.writerow([f"q{i}", question, str(2 * i)])
    return jsonl, table


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def median_run(step: Callable[[], None], runs: int, child: bool) -> tuple[float, float]:
    step()  # warm-up
    walls, cpus = [], []
    for _ in range(runs):
        before = _cpu() if child else time.process_time()
        start = time.perf_counter()
        step()
        walls.append(time.perf_counter() - start)
        cpus.append((_cpu() if child else time.process_time()) - before)
    return statistics.median(walls), statistics.median(cpus)


def report(label: str, wall: float, cpu: float, target: float) -> None:
    # The target is wall time on an idle machine; on a busy one the CPU time is the fairer
    # reading, so each is set against it.
    def verdict(seconds: float) -> str:
        return "ok" if seconds <= target else "OVER"

    print(
        f"{label:<58} target ≤ {target:g} s   measured {wall:6.3f} s wall ({verdict(wall)})"
        f"  {cpu:6.3f} s cpu ({verdict(cpu)})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", type=int, default=1000)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    sys.path.insert(0, str(SRC))
    from anpord.importers import import_cases

    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])),
    }
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        config = promptfoo_config(folder, args.tests)
        jsonl, table = dataset(folder, args.rows)
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from import_bench import case as evals_json_case

        reference = folder / "evals.json"
        cases_json = {"skill_name": "x", "evals": [evals_json_case(i) for i in range(10_000)]}
        reference.write_text(json.dumps(cases_json), encoding="utf-8")
        wall, cpu = median_run(
            lambda: import_cases("evals-json", str(reference)), args.runs, child=False
        )
        report("reference: evals-json 10,000 cases, in-process", wall, cpu, 0.5)
        suite = import_cases("promptfoo", str(config))
        print(
            f"promptfoo: {args.tests} tests x 3 prompts = {suite.tally.cases} cases, "
            f"{suite.tally.converted} converted, {suite.tally.needs_author} placeholders, "
            f"{len(suite.source) / 1e6:.1f} MB of suite"
        )
        cases = [
            (
                "promptfoo",
                str(config),
                {},
                PROMPTFOO_TARGET_S,
                f"promptfoo {args.tests} tests x 3 prompts",
            ),
            (
                "dataset",
                str(jsonl),
                {"match": "includes"},
                DATASET_TARGET_S,
                f"dataset JSONL {args.rows:,} lines",
            ),
            (
                "dataset",
                str(table),
                {"match": "includes"},
                DATASET_TARGET_S,
                f"dataset CSV {args.rows:,} rows",
            ),
        ]
        for fmt, path, options, target, label in cases:
            wall, cpu = median_run(
                lambda: import_cases(fmt, path, **options), args.runs, child=False
            )
            report(f"{label}, in-process", wall, cpu, target)
            flags = [f"--{k.replace('_', '-')}={v}" for k, v in options.items()]
            out = folder / "out.eval.py"
            command = [
                sys.executable,
                "-m",
                "anpord",
                "eval",
                "import",
                "--format",
                fmt,
                path,
                *flags,
                "--out",
                str(out),
                "--force",
            ]

            def cli() -> None:
                done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
                if done.returncode != 0:
                    raise SystemExit(done.stderr)

            wall, cpu = median_run(cli, args.runs, child=True)
            report(f"{label}, anpord eval import", wall, cpu, target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
