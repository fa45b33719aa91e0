"""The model proxy (``Variant(model_proxy=True)``): what it adds to a model call and to a run.

    python bench/proxy.py [--calls 2000] [--cases 1000] [--concurrency 100] [--latency 0.05]
                          [--repeats 3] [--only latency|w1]

Figures (printed, not asserted), each against a scripted model server in a separate process
(``python -m anpord.testing.model_server``):

1. **Added latency per call**: ``--calls`` chat-completions requests one after another on one
   kept-alive aiohttp session, straight to the server and through a ``ModelProxyService`` started
   in this process (as a trial starts it: the proxy itself is the process it starts), the server
   answering at once. Printed: the median and p99 of each and the median difference. Target:
   ≤ 2 ms added.
2. **W1 with vs without the proxy**: ``anpord eval`` (a subprocess) of ``--cases`` single-turn
   cases through the ``openai:`` harness, the server answering after ``--latency`` seconds,
   ``max_concurrency=--concurrency``; the same run with ``model_proxy=True`` on the variant (the
   run's one proxy process, each trial its own address and stand-in on it, every call recorded).
   Best wall of ``--repeats`` runs each, interleaved, and the least CPU seconds (user + sys) of
   each: the runner's own process (W1 is CPU-bound on its core at C=100, so what the proxy adds
   there is what its wall time shows) and the run's with its children (the proxy's process, on
   another core, included). Target: ≤ 10% more wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
sys.path.insert(0, str(SRC))

TARGET_ADDED_MS = 2.0
TARGET_RATIO = 1.10

CONFIG = """
from anpord import define_eval_config, Variant

config = define_eval_config(
    max_concurrency={conc}, timeout=300,
    variants=[Variant(harness="openai:bench-model", env={{"OPENAI_BASE_URL": {url!r}}},
                      options={{"max_connections": {conc}, "max_attempts": 1}}, model_proxy={proxy})],
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


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])))


def start_server(latency: float) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-m", "anpord.testing.model_server", "--latency", str(latency),
                             "--no-record"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=_env())
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def stop_server(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(timeout=10)


async def _timed_calls(session: object, url: str, n: int) -> list[float]:
    body = json.dumps({"model": "bench-model", "messages": [{"role": "user", "content": "ping"}]}).encode()
    headers = {"Content-Type": "application/json", "Authorization": "Bearer x"}
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        async with session.post(url + "/chat/completions", data=body, headers=headers) as resp:  # type: ignore[attr-defined]
            await resp.read()
            assert resp.status == 200, resp.status
        out.append(time.perf_counter() - t0)
    return out


async def latency(url: str, n: int) -> None:
    import aiohttp

    from anpord.authoring._config import Variant
    from anpord.proxy._service import ModelProxyService
    from anpord.runner._services import ServiceContext

    events: list[object] = []
    service = ModelProxyService()
    variant = Variant(harness="openai:bench-model", model_proxy=True, env={"OPENAI_BASE_URL": url})
    await service.start(ServiceContext(variant=variant, label="bench", sandbox=None, log=lambda m: None,
                                       record=events.append))
    proxied = service.env()["OPENAI_BASE_URL"]
    async with aiohttp.ClientSession() as session:
        await _timed_calls(session, url, 50)  # warm both paths
        await _timed_calls(session, proxied, 50)
        direct, through = [], []
        for _ in range(4):  # interleaved, so drift on a busy machine hits both alike
            direct += await _timed_calls(session, url, n // 4)
            through += await _timed_calls(session, proxied, n // 4)
    await service.stop()

    def ms(values: list[float], q: float) -> float:
        return sorted(values)[min(len(values) - 1, int(q * len(values)))] * 1000

    added = statistics.median(through) * 1000 - statistics.median(direct) * 1000
    print(f"per call, {len(direct)} calls each, one after another on one connection:")
    print(f"  direct         median {ms(direct, 0.5):6.3f} ms   p99 {ms(direct, 0.99):6.3f} ms")
    print(f"  through proxy  median {ms(through, 0.5):6.3f} ms   p99 {ms(through, 0.99):6.3f} ms")
    print(f"  added median   {added:6.3f} ms   (target <= {TARGET_ADDED_MS} ms: "
          f"{'ok' if added <= TARGET_ADDED_MS else 'MISSED'}); {len(events) - 50} calls recorded")


def _project(folder: Path, url: str, n: int, conc: int, proxy: bool) -> Path:
    evals = folder / "evals"
    evals.mkdir(parents=True)
    (evals / "evals.config.py").write_text(CONFIG.format(url=url, conc=conc, proxy=proxy))
    (evals / "w1.eval.py").write_text(EVAL.format(n=n))
    return folder


# ``anpord eval`` in a process that says, as it exits, the CPU seconds it used itself (not its
# children's: the proxy's process is one).
_EVAL = ("import atexit, resource, runpy, sys\n"
         "def said():\n"
         "    r = resource.getrusage(resource.RUSAGE_SELF)\n"
         "    sys.stderr.write(f'\\nBENCH_SELF_CPU {r.ru_utime + r.ru_stime}\\n')\n"
         "atexit.register(said)\n"
         "sys.argv = ['anpord', 'eval']\n"
         "runpy.run_module('anpord', run_name='__main__')\n")


def _eval(folder: Path, cpu: list[float] | None = None, own: list[float] | None = None) -> float:
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _EVAL], cwd=folder, env=_env(),
                          capture_output=True, text=True, timeout=900, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if cpu is not None:  # CPU seconds of the run and its processes: what the machine spent
        cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    if own is not None:  # the runner's own: what W1's wall time, CPU-bound on its core, shows
        own.append(float(done.stderr.rsplit("BENCH_SELF_CPU ", 1)[1].split()[0]))
    if done.returncode != 0:
        raise SystemExit(f"anpord eval failed in {folder}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return wall


def w1(url: str, n: int, conc: int, repeats: int) -> None:
    with tempfile.TemporaryDirectory(prefix="anpord-bench-proxy-") as tmp:
        bare = _project(Path(tmp) / "bare", url, n, conc, False)
        proxied = _project(Path(tmp) / "proxied", url, n, conc, True)
        _eval(bare)  # warm the bytecode caches and the server
        walls: dict[str, list[float]] = {"without": [], "with": []}
        cpus: dict[str, list[float]] = {"without": [], "with": []}
        owns: dict[str, list[float]] = {"without": [], "with": []}
        for _ in range(repeats):
            walls["without"].append(_eval(bare, cpus["without"], owns["without"]))
            walls["with"].append(_eval(proxied, cpus["with"], owns["with"]))
        runs = sorted((proxied / ".anpord" / "runs").iterdir())
        from anpord.results import read_run

        reading = read_run(runs[-1])
        calls = sum(1 for t in reading.trials for e in reading.events(t) if e.type == "model.called")
    best = {k: min(v) for k, v in walls.items()}
    ratio = best["with"] / best["without"]
    print(f"W1: {n} cases, model latency as given, C={conc}; anpord eval wall, best of {repeats}:")
    print(f"  without proxy  {best['without']:6.2f} s   ({', '.join(f'{w:.2f}' for w in walls['without'])})")
    print(f"  with proxy     {best['with']:6.2f} s   ({', '.join(f'{w:.2f}' for w in walls['with'])})")
    print(f"  ratio          {ratio:6.3f}   (target <= {TARGET_RATIO}: {'ok' if ratio <= TARGET_RATIO else 'MISSED'}); "
          f"{calls} proxied calls recorded in the last run")
    own = {k: min(v) for k, v in owns.items()}
    print(f"  runner CPU s   without {own['without']:.2f}, with {own['with']:.2f}: "
          f"{(own['with'] - own['without']) / n * 1000:.2f} ms more per trial")
    cpu = {k: min(v) for k, v in cpus.items()}
    print(f"  all CPU s      without {cpu['without']:.2f}, with {cpu['with']:.2f} (the proxy's process too): "
          f"{(cpu['with'] - cpu['without']) / n * 1000:.2f} ms more per trial")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--cases", type=int, default=1000)
    p.add_argument("--concurrency", type=int, default=100)
    p.add_argument("--latency", type=float, default=0.05)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--only", choices=["latency", "w1"])
    args = p.parse_args()
    if args.only in (None, "latency"):
        proc, url = start_server(0.0)
        try:
            asyncio.run(latency(url, args.calls))
        finally:
            stop_server(proc)
    if args.only in (None, "w1"):
        proc, url = start_server(args.latency)
        try:
            w1(url, args.cases, args.concurrency, args.repeats)
        finally:
            stop_server(proc)


if __name__ == "__main__":
    main()
