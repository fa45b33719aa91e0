"""Redaction cost: microseconds per KB of trial-record text with 0, 1 and 10 declared secrets,
and microseconds per trial record written by ``RunWriter`` (redaction included).

    python bench/redact_cost.py [--repeat 2000] [--against OTHER_CHECKOUT/src]

Each figure is the best of 7 batches (a shared machine adds other processes' time to the rest).
``--against`` runs the same figures on another checkout's code first (say, the previous commit's,
from ``git worktree add /tmp/before HEAD~1``), then on this one: a before/after.

The ``Redactor`` runs over every results.jsonl line, trial record and events file a run writes
(and the reports), so its cost per KB is part of the runner's per-trial cost. The text is a trial
record as ``RunWriter`` writes it (assertions, logs, events, about 2.5 KB). Printed per secret
count: the cost on a record holding no secret (the common case), on one holding a secret (in
the reply, a log line and a tool input), and the time to build the ``Redactor`` (once per run).

Two kinds of secret: API-key-like (letters and digits) and awkward ones (quotes, backslashes,
accents, URL-special characters, a trailing newline), whose patterns have many more branches.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

if __name__ == "__main__" and "--against" not in sys.argv:
    # The code measured: this checkout's, or the one a parent run names.
    sys.path.insert(0, os.environ.get("REDACT_COST_SRC") or str(Path(__file__).resolve().parents[1] / "src"))

    from anpord.events import Event
    from anpord.results._model import TrialResult
    from anpord.results._redact import Redactor
    from anpord.results.artifacts import RunWriter

AWKWARD = ['pa"ss\\word-Zq8', "clé-sécrète-42\n", "a/b?c=d&e f=9", 'it\'s "both" \\ é!']


def key_like(rnd: random.Random) -> str:
    return "".join(rnd.choice(string.ascii_letters + string.digits) for _ in range(40))


def awkward(rnd: random.Random, i: int) -> str:
    if i < len(AWKWARD):
        return AWKWARD[i]
    return "".join(
        rnd.choice(string.ascii_letters + string.digits + "\"\\'/ é&?=") for _ in range(24)
    )


def record(secret: str | None) -> str:
    """A trial record as RunWriter writes it; ``secret`` is in the reply, a log line and a tool
    input when given."""
    said = secret if secret is not None else "It is Sunny in Brooklyn, with a high of 21."
    events = [
        {"type": "message", "ts": 1717171717.1 + i, "role": "assistant", "text": said}
        if i == 3
        else {
            "type": "tool_call",
            "ts": 1717171717.1 + i,
            "name": "get_weather",
            "input": {"city": "Brooklyn", "units": "metric", "token": said if i == 1 else "n/a"},
        }
        for i in range(6)
    ]
    line = {
        "case_id": "weather/brooklyn-forecast",
        "variant": "python:agents.weather:agent/default",
        "trial": 0,
        "verdict": "failed",
        "reason": "message_includes 'Rain': reply did not include 'Rain'",
        "duration": 0.4213,
        "score": None,
        "error": None,
        "assertions": [
            {
                "name": "message_includes",
                "label": None,
                "kind": "gate",
                "status": "failed",
                "score": 0.0,
                "threshold": None,
                "expected": "Rain",
                "actual": said,
                "message": "reply did not include 'Rain'",
                "scope": "turn",
            },
            {
                "name": "tool_called",
                "label": "looked up the weather",
                "kind": "gate",
                "status": "passed",
                "score": 1.0,
                "threshold": None,
                "expected": "get_weather",
                "actual": ["get_weather"],
                "message": None,
                "scope": "trial",
            },
        ],
        "usage": {"input_tokens": 812, "output_tokens": 64, "cost": 0.0021},
        "tags": ["weather", "smoke"],
        "file": "evals/weather.eval.py",
        "artifact": "trials/weather/brooklyn-forecast/python_agents.weather_agent_default/0.json",
        "traceback": None,
        "logs": ["asking for Brooklyn", f"the agent said: {said}", "done in 0.42s"],
        "started_at": 1717171717.0,
        "events": events,
    }
    return json.dumps(line, ensure_ascii=False)


# Each figure is the best of this many batches: on a shared machine the best is the code's cost,
# the others add what other processes took.
BATCHES = 7


def best(run: Callable[[], object], repeat: int) -> float:
    """Seconds per call of ``run``, the best of ``BATCHES`` batches of ``repeat // BATCHES``."""
    n = max(repeat // BATCHES, 1)
    times = []
    for _ in range(BATCHES):
        started = time.perf_counter()
        for _ in range(n):
            run()
        times.append((time.perf_counter() - started) / n)
    return min(times)


def per_kb(redact: Redactor, text: str, repeat: int) -> float:
    redact(text)  # warm
    return best(lambda: redact(text), repeat) / (len(text.encode("utf-8")) / 1024) * 1e6


def written(values: list[str], secret: str | None, repeat: int) -> float:
    """µs per trial for ``RunWriter.write_trial`` (encode, redact, two appends) with ``values``
    declared, on a record holding ``secret`` (or none)."""
    raw = json.loads(record(secret))
    events = [Event(e.pop("type"), e) for e in raw.pop("events")]
    for key in ("traceback", "artifact"):
        raw.pop(key)
    raw["v"] = 1
    with tempfile.TemporaryDirectory() as tmp:
        writer = RunWriter(Path(tmp) / "run", Redactor(values))
        result = TrialResult.from_dict(raw)
        writer.write_trial(result, events)  # warm
        took = best(lambda: writer.write_trial(result, events), repeat)
        writer.close()
    return took * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=2000)
    ap.add_argument("--against", metavar="SRC", help="another checkout's src/ to measure first")
    args = ap.parse_args()
    if args.against:
        here = str(Path(__file__).resolve().parents[1] / "src")
        for label, src in (("before", args.against), ("after", here)):
            print(f"== {label}: {src}", flush=True)
            subprocess.run([sys.executable, __file__, "--repeat", str(args.repeat)],
                           env={**os.environ, "REDACT_COST_SRC": src}, check=True)
        return
    rnd = random.Random(7)
    clean = record(None)
    print(f"trial record: {len(clean.encode()) / 1024:.1f} KB; figures in µs per KB")
    print(f"{'secrets':<14}{'no secret in text':>20}{'secret in text':>16}{'build':>10}")
    for kind, make in (
        ("key-like", lambda i: key_like(rnd)),
        ("awkward", lambda i: awkward(rnd, i)),
    ):
        for n in (0, 1, 10) if kind == "key-like" else (1, 10):
            values = [make(i) for i in range(n)]
            started = time.perf_counter()
            redact = Redactor(values)
            build_ms = (time.perf_counter() - started) * 1e3
            quiet = per_kb(redact, clean, args.repeat)
            if values:
                dirty = record(values[0])
                loud = f"{per_kb(redact, dirty, args.repeat):.2f}"
                assert values[0].strip() not in redact(dirty)
            else:
                loud = "-"
            label = f"{n} {kind}" if n else "0"
            print(f"{label:<14}{quiet:>20.2f}{loud:>16}{build_ms:>8.1f}ms")
    print(f"RunWriter.write_trial, µs per trial record (redaction, encoding and appends)")
    print(f"{'secrets':<14}{'no secret in record':>20}{'secret in record':>18}")
    rnd = random.Random(7)
    for n in (0, 1, 10):
        values = [key_like(rnd) for _ in range(n)]
        quiet = written(values, None, args.repeat)
        loud = f"{written(values, values[0], args.repeat):.1f}" if values else "-"
        print(f"{n:<14}{quiet:>20.1f}{loud:>18}")


if __name__ == "__main__":
    main()
