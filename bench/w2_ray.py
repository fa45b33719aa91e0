"""W2 — the same suite on the local executor and on a two-node Ray cluster, side by side.

    python bench/w2_ray.py [--trials 10000] [--concurrency 400] [--latency 0.05] [--skip-local]

The suite: N single-turn cases (one eval file fanned out with ``each=``), each ``await
t.send(...)`` then one ``includes`` check, against a Python agent (``anpord.models.chat_agent``)
that calls a scripted model server answering after 50 ms (``python -m
anpord.testing.model_server``, a separate process). ``anpord eval`` runs it as a subprocess,
``max_concurrency=C``:

1. **local**: ``anpord eval`` (the default executor: every trial in the driver's event loop).
2. **ray**: ``anpord eval --executor ray`` against a Ray cluster this script starts on this
   machine (a head node and a second node, 1 CPU each, on loopback addresses; the same helper
   the tests use) and stops at the end.

For each: wall time (process start to exit, interpreter start-up and discovery included), trials
per second, the driver's peak memory (VmHWM of the ``anpord`` process, sampled), the driver's CPU
per trial, the time to the first trial's start (connection, upload, probe and workers for Ray)
and the steady-state rate (first trial's start to last trial's end). The latency-bound ideal is
N / C × latency.

3. **batching** (Ray): the same suite once more through ``execute`` in this process, to read the
   executor's counters: how many specs travel per call to a worker and how many results per
   message back, and the driver's CPU per trial with nothing else in the process.

Figures are printed, never asserted; the machine is shared, so its load is printed too.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
sys.path.insert(0, str(SRC))
sys.path.insert(0, str(ROOT / "tests"))

CONFIG = """
from anpord import define_eval_config

config = define_eval_config(harness="python:agents.pinger:agent", max_concurrency={conc}, timeout=300)
"""

AGENT = """
from anpord.models import chat_agent

# The URL is written here: a Ray worker does not see the driver's environment.
agent = chat_agent(model="bench-model", base_url={url!r}, max_connections={conc})
"""

EVAL = """
from anpord import define_eval
from anpord.expect import includes


@define_eval(each=range({n}))
async def test(t, row):
    await t.send(f"ping {{row}}")
    t.check(t.reply, includes("ping"))
"""


def env() -> dict[str, str]:
    return dict(os.environ, NO_COLOR="1",
                PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])))


def start_server(latency: float) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "anpord.testing.model_server", "--latency", str(latency), "--no-record"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env(),
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def make_project(url: str, n: int, conc: int) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="anpord-w2-"))
    (folder / "evals").mkdir()
    (folder / "agents").mkdir()
    (folder / "agents" / "__init__.py").write_text("")
    (folder / "agents" / "pinger.py").write_text(AGENT.format(url=url, conc=conc))
    (folder / "evals" / "evals.config.py").write_text(CONFIG.format(conc=conc))
    (folder / "evals" / "ping.eval.py").write_text(EVAL.format(n=n))
    return folder


def _peak_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def run_cli(folder: Path, *args: str) -> dict[str, Any]:
    """One ``anpord eval`` run: wall, exit code, closing line, driver peak memory and CPU."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.time()
    proc = subprocess.Popen([sys.executable, "-m", "anpord", "eval", *args], cwd=folder, env=env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = [0]

    def sample() -> None:
        while proc.poll() is None:
            peak[0] = max(peak[0], _peak_kib(proc.pid))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    wall = time.time() - started
    sampler.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    runs = sorted((folder / ".anpord" / "runs").iterdir())
    results = [json.loads(line) for line in (runs[-1] / "results.jsonl").read_text().splitlines()]
    first = min(r["started_at"] for r in results)
    last = max(r["started_at"] + r["duration"] for r in results)
    return {
        "wall": wall, "code": proc.returncode, "tail": (out.strip().splitlines() or [""])[-1],
        "stderr": err.strip()[-500:], "peak_mb": peak[0] / 1024, "trials": len(results),
        "cpu": (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
        "to_first": first - started, "steady": len(results) / max(last - first, 1e-9),
        "hosts": len({r.get("host") for r in results}),
    }


def show(label: str, r: dict[str, Any], n: int) -> None:
    print(f"  {label:6} {r['wall']:6.2f} s wall  {r['trials'] / r['wall']:7.0f} trials/s  "
          f"driver peak {r['peak_mb']:4.0f} MB  driver CPU {r['cpu'] / n * 1000:.2f} ms/trial  "
          f"first trial at {r['to_first']:.2f} s  steady {r['steady']:.0f} trials/s  "
          f"hosts {r['hosts']}  exit {r['code']}: {r['tail']}")
    if r["code"] not in (0, 1):
        print(f"         stderr: {r['stderr']}")


def batching(folder: Path, address: str) -> None:
    """The Ray run again, in this process, for the executor's batching counters."""
    from anpord.runner import (
        RunOptions,
        build_plan,
        execute,
        find_project,
        load_cases,
        select_files,
    )
    from anpord.runner._ray import RayExecutor

    cwd = os.getcwd()
    os.chdir(folder)
    try:
        project = find_project([])
        opts = RunOptions(executor="ray", ray_address=address, artifacts=False)
        plan = build_plan(project, load_cases(select_files(project, [])), opts)
        executor = RayExecutor.connect(project.folder, address=address, max_concurrency=plan.max_concurrency)
        cpu0, t0 = time.process_time(), time.perf_counter()
        result = execute(plan, opts, [], executor=executor)
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    finally:
        os.chdir(cwd)
    s = executor.stats
    print(f"  batching: {s['trials']} trials in {s['batches']} calls ({s['trials'] / max(s['batches'], 1):.1f} "
          f"specs per call), {s['messages']} result messages ({s['trials'] / max(s['messages'], 1):.1f} results "
          f"per message); {len(executor.shapes)} workers; in-process run {wall:.2f} s, driver CPU "
          f"{cpu / max(s['trials'], 1) * 1000:.2f} ms/trial; {result.summary.totals['passed']} passed")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=10_000)
    ap.add_argument("--concurrency", type=int, default=400)
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--skip-local", action="store_true")
    ap.add_argument("--skip-ray", action="store_true")
    args = ap.parse_args()
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 65536), hard))
    n, conc = args.trials, args.concurrency
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load {os.getloadavg()[0]:.1f}, "
          f"model latency {args.latency * 1000:.0f} ms")
    print(f"N={n}, C={conc}  (latency-bound ideal {n / conc * args.latency:.2f} s)")
    server, url = start_server(args.latency)
    folder = make_project(url, n, conc)
    results: dict[str, dict[str, Any]] = {}
    try:
        if not args.skip_local:
            results["local"] = run_cli(folder)
            show("local", results["local"], n)
        if not args.skip_ray:
            from ray_support import LocalCluster, Node

            t0 = time.time()
            cluster = LocalCluster([Node(num_cpus=1), Node(num_cpus=1)]).start()
            print(f"  (two-node Ray cluster up in {time.time() - t0:.1f} s, load {os.getloadavg()[0]:.1f})")
            try:
                results["ray"] = run_cli(folder, "--executor", "ray", "--ray-address", cluster.address)
                show("ray", results["ray"], n)
                batching(folder, cluster.address)
            finally:
                cluster.stop()
        if "local" in results and "ray" in results:
            local, ray = results["local"], results["ray"]
            print(f"  ray / local wall: {ray['wall'] / local['wall']:.2f}x  (target <= 2x); "
                  f"ray driver peak {ray['peak_mb']:.0f} MB (target <= 300 MB); steady-state wall time per trial: "
                  f"local {1000 / local['steady']:.3f} ms, ray {1000 / ray['steady']:.3f} ms")
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=10)
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
