"""Audit speed: ``anpord audit`` of a 100-case suite with all six saboteurs and local checks.

    python bench/audit.py [--cases 100]

The suite (written to a temporary project): 60% scripted cases fanned out with ``each=`` (an
``includes`` check on the reply), 20% declarative cases with a ``source=`` workspace and a
Python ``validate`` reading it, 20% hollow cases (``satisfies(lambda s: len(s) >= 0)``). The
project's agent is an in-process Python echo agent; ``anpord eval`` runs once first, so
``shuffle`` and ``mutate`` have a recording to replay. The figure is the wall time of
``anpord audit --fail-on never --json`` through the CLI (start-up, discovery, 6 × N trials, the
run folder, the run store and the report). Target: ≤ 10 s. Printed, not asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = 10.0
SRC = Path(__file__).resolve().parents[1] / "src"

AGENT = '''
from pathlib import Path

async def agent(turn):
    if turn.workspace is not None and (turn.workspace / "todo.txt").exists():
        (turn.workspace / "done.txt").write_text("done: " + turn.input)
        return "wrote done.txt"
    return "echo: " + turn.input
'''

CONFIG = '''
from anpord import define_eval_config
config = define_eval_config(harness="python:bench_agents.agent:agent", max_concurrency=32, timeout=30)
'''

SCRIPTED = '''
from anpord import define_eval
from anpord.expect import includes

ROWS = [{{"n": i}} for i in range({n})]

@define_eval(each=ROWS, id="scripted")
async def test(t, row):
    await t.send(f"item {{row['n']}}")
    t.check(t.reply, includes(f"echo: item {{row['n']}}"))
'''

DECLARATIVE = '''
from anpord import define_eval, files

def done(ctx):
    return ctx.exists("done.txt") and "done" in ctx.read_text("done.txt")

test = define_eval(prompt="finish task {i}", source=files({{"todo.txt": "task {i}"}}), validate=done)
'''

HOLLOW = '''
from anpord import define_eval
from anpord.expect import satisfies

@define_eval
async def test(t):
    await t.send("anything {i}")
    t.check(t.reply, satisfies(lambda s: len(s) >= 0))
'''


def write_project(root: Path, cases: int) -> None:
    evals = root / "evals"
    (root / "bench_agents").mkdir(parents=True)
    (root / "bench_agents" / "__init__.py").write_text("")
    (root / "bench_agents" / "agent.py").write_text(AGENT)
    evals.mkdir()
    (evals / "evals.config.py").write_text(CONFIG)
    scripted = cases * 6 // 10
    declarative = hollow = (cases - scripted) // 2
    scripted = cases - declarative - hollow
    (evals / "scripted.eval.py").write_text(SCRIPTED.format(n=scripted))
    for i in range(declarative):
        (evals / f"task_{i:03d}.eval.py").write_text(DECLARATIVE.format(i=i))
    for i in range(hollow):
        (evals / f"hollow_{i:03d}.eval.py").write_text(HOLLOW.format(i=i))


def anpord(root: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])),
               NO_COLOR="1")
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "anpord", *args], cwd=root, env=env, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, check=False)
    return proc, time.perf_counter() - started


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=100)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="anpord-bench-audit-") as tmp:
        root = Path(tmp)
        write_project(root, args.cases)
        recorded, eval_s = anpord(root, "eval", "--json")
        if recorded.returncode != 0:
            print(recorded.stderr[-2000:], file=sys.stderr)
            return 1
        proc, audit_s = anpord(root, "audit", "--fail-on", "never", "--json")
        if proc.returncode != 0:
            print(proc.stderr[-2000:], file=sys.stderr)
            return 1
        doc = json.loads(proc.stdout)
    trials = doc["caught"] + doc["let_through"] + doc["could_not_stand_in"]
    print(f"recording run (anpord eval, {args.cases} cases): {eval_s:.2f} s")
    print(f"audit of {args.cases} cases x {len(doc['saboteurs'])} saboteurs ({trials} trials): "
          f"{audit_s:.2f} s wall (target <= {TARGET_S:g} s) {'OK' if audit_s <= TARGET_S else 'OVER'}")
    print(f"  catch rate {doc['catch_rate']:.0%}, {doc['hollow']} hollow, {doc['weak']} weak, {doc['sound']} sound")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
