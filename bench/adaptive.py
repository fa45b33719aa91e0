"""Adaptive trials on real runs: ``--trials auto`` against ``--trials 10``.

    python bench/adaptive.py [--steady 40] [--flaky 10] [--fixed 10] [--runs 3]

A suite of ``--steady`` always-passing and ``--flaky`` coin-flip cases (a real Python agent; the
coin flips draw from ``random``). The first run (``--trials 10``) is the baseline; then, against
it, ``--runs`` runs each of ``--trials auto`` and ``--trials 10``, all with ``--fail-on
regressed``. Printed per run: trials spent, the comparison's verdict for the variant and, for
``auto``, its cells' stop reasons by kind; at the end, the mean trials of ``auto`` as a share of
``--trials 10``'s, and for each mode the verdicts, false regressions and exit codes.
Target: ``auto`` spends at most half the trials of ``--trials 10`` and reaches the same decision
("unchanged").
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"

AGENT = """
import random


async def agent(turn):
    if turn.input.startswith("steady"):
        return "ok"
    return "ok" if random.random() < 0.5 else "nope"
"""

CONFIG = """from anpord import define_eval_config

config = define_eval_config(harness="python:agents.coin:agent", timeout=20)
"""

EVAL = """from anpord import define_eval
from anpord.expect import equals


@define_eval(each=[*("steady%d" % i for i in range({steady})), *("flaky%d" % i for i in range({flaky}))])
async def test(t, row):
    await t.send(row)
    t.check(t.reply, equals("ok"))
"""


def _eval(project: Path, *args: str) -> dict:
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(SRC)}
    env.pop("ANPORD_DB", None)
    proc = subprocess.run([sys.executable, "-m", "anpord", "eval", "--json", "--fail-on", "regressed",
                           *args], cwd=project, env=env, capture_output=True, text=True,
                          timeout=1200, check=False)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"anpord eval {' '.join(args)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def _verdict(doc: dict) -> str:
    variants = (doc.get("comparison") or {}).get("variants") or []
    return ", ".join(f"{v.get('variant')}: {v.get('status')}" for v in variants) or "no comparison"


def _kind(reason: str | None) -> str:
    """A stop reason's kind, for counting (the reasons themselves name each cell's counts)."""
    if not reason:
        return "none"
    for words, kind in (("matched its baseline", "matched"), ("its own drop is significant", "own drop"),
                        ("would not show it", "drop not showable"), ("reached the maximum", "max"),
                        ("recovered", "recovered"), ("nothing measured", "void")):
        if words in reason:
            return kind
    return "strayed"  # counts off its baseline's, stopped with the variant's decision


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steady", type=int, default=40)
    ap.add_argument("--flaky", type=int, default=10)
    ap.add_argument("--fixed", type=int, default=10)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="anpord-adaptive-") as tmp:
        project = Path(tmp)
        (project / "agents").mkdir()
        (project / "agents" / "coin.py").write_text(AGENT)
        (project / "evals").mkdir()
        (project / "evals" / "evals.config.py").write_text(CONFIG)
        (project / "evals" / "coin.eval.py").write_text(EVAL.format(steady=args.steady, flaky=args.flaky))
        _eval(project, "--trials", str(args.fixed))  # the baseline
        cells = args.steady + args.flaky
        spent: dict[str, list[int]] = {"auto": [], str(args.fixed): []}
        verdicts: dict[str, list[str]] = {"auto": [], str(args.fixed): []}
        exits: dict[str, list[int]] = {"auto": [], str(args.fixed): []}
        for i in range(args.runs):
            for mode in ("auto", str(args.fixed)):
                doc = _eval(project, "--trials", mode)
                n = doc["totals"]["trials"]
                spent[mode].append(n)
                verdicts[mode].append(_verdict(doc).rpartition(": ")[2])
                exits[mode].append(doc.get("exit_code", -1))
                line = f"  run {i + 1} --trials {mode:>4}: {n:>4} trials, variant {_verdict(doc)}"
                if mode == "auto":
                    reasons = collections.Counter(_kind(c.get("stop_reason")) for c in doc["cells"])
                    line += f"; stop reasons {dict(reasons)}"
                print(line, flush=True)
        fixed = args.fixed * cells
        auto = sum(spent["auto"]) / len(spent["auto"])
        print(f"adaptive trials ({args.steady} always-passing + {args.flaky} coin-flip cases, "
              f"{args.runs} runs each against a --trials {args.fixed} baseline):")
        print(f"  --trials auto spent {auto:.0f} trials a run on average ({auto / fixed:.0%} of "
              f"--trials {args.fixed}'s {fixed}; target ≤ 50%)")
        for mode in ("auto", str(args.fixed)):
            tally = dict(collections.Counter(verdicts[mode]))
            bad = sum(1 for v in verdicts[mode] if v == "regressed")
            print(f"  --trials {mode:>4}: variant verdicts {tally}; false regressions {bad} of {args.runs}; "
                  f"exit codes {dict(collections.Counter(exits[mode]))}")


if __name__ == "__main__":
    main()
