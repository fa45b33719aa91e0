"""HTTP agent overhead: the same trivial suite in-process (``python:``) and served (``anpord serve``
+ ``http://``), through the real CLI.

    python bench/http_overhead.py [--cases 2000] [--runs 3]

Each case sends one message to an echo agent and checks the reply (one session, one turn, one
delete per trial over HTTP). Two settings: ``--max-concurrency 8`` (throughput) and ``1`` (each
trial's latency, nothing overlapping). The figure is the median wall time of ``--runs`` runs of
``anpord eval`` per setting, and from it the milliseconds HTTP adds per trial. The server runs in
its own process, as it would in use. Target: the added cost per trial stays far below a model
call (which takes hundreds of milliseconds).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

AGENT = "async def agent(turn):\n    return turn.input\n"
CONFIG = 'from anpord import define_eval_config\nconfig = define_eval_config(harness="python:bench_agents.echo:agent")\n'
EVAL = """
from anpord import define_eval
from anpord.expect import includes


@define_eval(each=range({n}))
async def test(t, row):
    await t.send(f"ping {{row}}")
    t.check(t.reply, includes("ping"))
"""


def _env() -> dict[str, str]:
    env = dict(os.environ, NO_COLOR="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    return env


def _project(n: int) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="anpord-bench-http-"))
    (folder / "bench_agents").mkdir()
    (folder / "bench_agents" / "__init__.py").write_text("")
    (folder / "bench_agents" / "echo.py").write_text(AGENT)
    (folder / "evals").mkdir()
    (folder / "evals" / "evals.config.py").write_text(CONFIG)
    (folder / "evals" / "ping.eval.py").write_text(EVAL.format(n=n))
    return folder


def _eval(folder: Path, harness: str, concurrency: int) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "anpord", "eval", "--harness", harness, "--no-artifacts",
         "--max-concurrency", str(concurrency)],
        cwd=folder, env=_env(), capture_output=True, text=True, check=False,
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"anpord eval --harness {harness} failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()

    folder = _project(args.cases)
    server = subprocess.Popen(
        [sys.executable, "-m", "anpord", "serve", "bench_agents.echo:agent", "--port", "0"],
        cwd=folder, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    try:
        assert server.stdout is not None
        match = re.search(r"http://\S+", server.stdout.readline())
        if match is None:
            raise SystemExit("anpord serve printed no URL")
        url = match.group(0)
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, {args.cases} cases, "
              f"median of {args.runs} runs")
        for concurrency in (8, 1):
            local = statistics.median(_eval(folder, "python:bench_agents.echo:agent", concurrency)
                                      for _ in range(args.runs))
            served = statistics.median(_eval(folder, url, concurrency) for _ in range(args.runs))
            added_ms = (served - local) / args.cases * 1000
            print(f"--max-concurrency {concurrency}: python: {local:.2f}s ({args.cases / local:,.0f} trials/s), "
                  f"http: {served:.2f}s ({args.cases / served:,.0f} trials/s); "
                  f"HTTP adds {added_ms:.2f} ms per trial")
    finally:
        server.terminate()
        server.wait(30)
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
