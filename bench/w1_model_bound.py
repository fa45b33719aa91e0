"""W1 — model-bound evals: single-turn cases through the ``openai:`` harness against a scripted
model server that answers after 50 ms.

    python bench/w1_model_bound.py [--latency 0.05] [--sizes 1000x100,5000x500] [--skip-cli] [--judge]

For each size N×C (N cases, concurrency C) it prints, measured in the same run against the same
server (a separate process, ``python -m anpord.testing.model_server``):

1. **bare client floor**: N chat-completions requests with C in flight, straight on aiohttp
   (one session, a connector of C) — what any client needs at least.
2. **anpord eval (CLI)**: ``anpord eval`` as a subprocess in a temp project: N cases (one eval
   file fanned out with ``each=``), each ``await t.send(...)`` then one ``includes`` check,
   ``max_concurrency=C``; wall time including interpreter start-up, discovery and artifacts.
   Targets: N=1000,C=100 ≤ 1.2 s and ≤ 1.5× the bare client; N=5000,C=500 ≤ 2.5 s.
3. **anpord eval, Python agent**: the same run with a Python agent that posts to the server on
   one aiohttp session it opens in its run-level ``setup`` hook and closes in ``teardown``.
   Target (runner overhead): N=1000,C=100 ≤ 1.2 s wall including start-up.
4. **harness alone**: the same N turns driven straight through the harness protocol
   (``open_session`` → ``run_turn``) in this process, no runner: the harness + client share of the
   CLI figure, with CPU milliseconds per trial.

4. **anpord eval with a judge** (``--judge``): the same CLI run with ``t.judge.closed_qa(...)`` on
   every case, judged by the same server (a forced tool call answered after the same latency).
   A judge starts when the reply is in, so it should add one model latency per case — per wave of
   C cases, ``N/C × latency`` in all. Printed: the extra wall time, in those latencies.

The CLI runs find their bytecode cached, as an installed package does (a warm-up run fills a
temporary ``PYTHONPYCACHEPREFIX``; nothing is written into the source tree); ``--no-bytecode-cache``
times them compiling every module from source instead, as under ``PYTHONDONTWRITEBYTECODE=1``.

inspect-ai and promptfoo run against the same server when installed; otherwise a note says so.
Figures are printed, never asserted.

Side by side (``_against``): ``--against REV`` measures the current tree and REV (a temporary
``git worktree``) in the same invocation, ``--loops uvloop,asyncio`` each event loop; the bare
client, the harness alone (in a child process importing the side's ``src``) and both CLI runs
alternate between the sides ``--repeat`` times (default 3), and each figure is printed beside the
others with its ratio, its ratio to the bare client and its CPU time per trial. The model server
and the bare client (asyncio's own loop) are the same for every side.

    python bench/w1_model_bound.py --sizes 1000x100 --against main
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

# BENCH_SRC: the tree a child measures (``--against``); the model server is always this tree's.
HERE_SRC = Path(__file__).resolve().parents[1] / "src"
SRC = Path(os.environ.get("BENCH_SRC") or HERE_SRC)
sys.path.insert(0, str(SRC))
sys.path.insert(0, str(Path(__file__).resolve().parent))

CONFIG = """
from anpord import define_eval_config, Variant

config = define_eval_config(
    harness="openai:bench-model", max_concurrency={conc}, timeout=300,
    variants=[Variant(harness="openai:bench-model", env={{"OPENAI_BASE_URL": {url!r}}},
                      options={{"max_connections": {conc}}})],
)
"""

PYTHON_CONFIG = """
from anpord import define_eval_config

config = define_eval_config(harness="python:w1_agent:agent", max_concurrency={conc}, timeout=300)
"""

PYTHON_AGENT = """
import json

import aiohttp

URL = {url!r}


class Agent:
    \"\"\"One HTTP session for the whole run, opened and closed by the run-level hooks.\"\"\"

    async def setup(self):
        self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit={conc}))

    async def teardown(self):
        await self.session.close()

    async def __call__(self, turn):
        payload = {{"model": "bench-model", "messages": [{{"role": "user", "content": turn.input}}]}}
        async with self.session.post(URL + "/chat/completions", data=json.dumps(payload),
                                     headers={{"Content-Type": "application/json"}}) as resp:
            body = json.loads(await resp.read())
        return body["choices"][0]["message"]["content"]


agent = Agent()
"""

EVAL = """
from anpord import define_eval
from anpord.expect import includes


@define_eval(each=range({n}))
async def test(t, row):
    await t.send(f"ping {{row}}")
    t.check(t.reply, includes("ping"))
"""

JUDGE_CONFIG = """
from anpord import define_eval_config, JudgeConfig, Variant

config = define_eval_config(
    harness="openai:bench-model", max_concurrency={conc}, timeout=300,
    variants=[Variant(harness="openai:bench-model", env={{"OPENAI_BASE_URL": {url!r}}},
                      options={{"max_connections": {conc}}})],
    judge=JudgeConfig(model="bench-judge", base_url={url!r}),
)
"""

JUDGE_EVAL = """
from anpord import define_eval
from anpord.expect import includes


@define_eval(each=range({n}))
async def test(t, row):
    await t.send(f"ping {{row}}")
    t.check(t.reply, includes("ping"))
    t.judge.closed_qa("the reply repeats the ping").gate()
"""

# The judge's answer: its question holds "[Criterion]", which no ping does.
JUDGE_RULES = [
    {
        "match": "[Criterion]",
        "replies": [{"tool_calls": [{"name": "grade", "arguments": {"reason": "echoed", "choice": "Y"}}]}],
    }
]


def start_server(latency: float) -> tuple[subprocess.Popen[str], str]:
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [str(HERE_SRC), os.environ.get("PYTHONPATH")])),
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "anpord.testing.model_server",
            "--latency",
            str(latency),
            "--no-record",
            "--rules",
            json.dumps(JUDGE_RULES),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def stop_server(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(timeout=10)


async def bare_client(url: str, n: int, conc: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds) for N requests, C at a time."""
    import aiohttp

    body = {"model": "bench-model", "messages": [{"role": "user", "content": "ping"}]}
    slots = asyncio.Semaphore(conc)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=conc)) as session:

        async def one(i: int) -> None:
            payload = json.dumps(
                {**body, "messages": [{"role": "user", "content": f"ping {i}"}]}
            ).encode()
            async with (
                slots,
                session.post(
                    url + "/chat/completions",
                    data=payload,
                    headers={"Content-Type": "application/json"},
                ) as resp,
            ):
                data = json.loads(await resp.read())
            assert "ping" in data["choices"][0]["message"]["content"]

        cpu0, t0 = time.process_time(), time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(n)))
        return time.perf_counter() - t0, time.process_time() - cpu0


async def harness_alone(url: str, n: int, conc: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds) for N turns through the harness protocol, C at a time."""
    from anpord.authoring import Variant
    from anpord.harnesses import HarnessContext, TurnRequest, resolve_harness

    harness = resolve_harness("openai:bench-model")
    variant = Variant(
        harness="openai:bench-model", options={"base_url": url, "max_connections": conc}
    )
    await harness.setup()
    slots = asyncio.Semaphore(conc)

    async def one(i: int) -> None:
        async with slots:
            ctx = HarnessContext(
                variant=variant, model=None, sandbox=None, log=lambda m: None, max_concurrency=conc
            )
            session = await harness.open_session(ctx, f"ses_{i}")
            events: list[Any] = []
            outcome = await session.run_turn(TurnRequest(input=f"ping {i}"), events.append)
            assert outcome.status == "completed" and "ping" in (outcome.message or "")
            await session.close()

    cpu0, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    await harness.teardown()
    return wall, cpu


# Where the CLI runs cache their bytecode (None: they compile from source every time).
PYCACHE: Path | None = None


def cli_run(url: str, n: int, conc: int, agent: str = "openai",
            side_env: dict[str, str] | None = None) -> tuple[float, float, int, str]:
    """(wall seconds, CPU seconds of the anpord process, exit code, its closing line);
    ``side_env``: the environment of the side measured (``--against``), else this tree's."""
    folder = Path(tempfile.mkdtemp(prefix="anpord-w1-"))
    try:
        (folder / "evals").mkdir()
        if agent == "python":
            (folder / "evals" / "evals.config.py").write_text(PYTHON_CONFIG.format(conc=conc))
            (folder / "w1_agent.py").write_text(PYTHON_AGENT.format(url=url, conc=conc))
            (folder / "evals" / "ping.eval.py").write_text(EVAL.format(n=n))
        else:
            config, case = (JUDGE_CONFIG, JUDGE_EVAL) if agent == "judge" else (CONFIG, EVAL)
            (folder / "evals" / "evals.config.py").write_text(config.format(conc=conc, url=url))
            (folder / "evals" / "ping.eval.py").write_text(case.format(n=n))
        env = dict(
            side_env or os.environ,
            NO_COLOR="1",
        )
        if side_env is None:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))
        if PYCACHE is not None:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
        else:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
            env.pop("PYTHONPYCACHEPREFIX", None)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "anpord", "eval"],
            cwd=folder,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        tail = (proc.stdout.strip().splitlines() or [""])[-1]
        return wall, cpu, proc.returncode, tail
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def others(url: str, n: int, conc: int) -> None:
    import importlib.util

    if importlib.util.find_spec("inspect_ai") is None:
        print("  inspect-ai: not installed (pip install inspect-ai to compare)")
    else:
        print(f"  inspect-ai: {inspect_ai_run(url, n, conc)}")
    if shutil.which("promptfoo") is None:
        print("  promptfoo: not installed (npm install -g promptfoo to compare)")
    else:
        print(f"  promptfoo: {promptfoo_run(url, n, conc)}")


INSPECT_TASK = """
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes
from inspect_ai.solver import generate


@task
def ping():
    return Task(dataset=[Sample(input=f"ping {{i}}", target="ping") for i in range({n})],
                solver=[generate()], scorer=includes())
"""


def inspect_ai_run(url: str, n: int, conc: int) -> str:
    folder = Path(tempfile.mkdtemp(prefix="anpord-w1-inspect-"))
    try:
        (folder / "ping_task.py").write_text(INSPECT_TASK.format(n=n))
        env = dict(
            os.environ,
            # inspect-ai's provider for any OpenAI-compatible server (chat completions).
            BENCH_BASE_URL=url,
            BENCH_API_KEY="sk-local-bench",
            INSPECT_LOG_DIR=str(folder / "logs"),
        )
        cmd = [
            sys.executable,
            "-m",
            "inspect_ai",
            "eval",
            "ping_task.py",
            "--model",
            "openai-api/bench/bench-model",
            "--max-connections",
            str(conc),
            "--display",
            "none",
            "--no-log-samples",
        ]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            return f"failed (exit {proc.returncode}): {(proc.stderr or proc.stdout).strip()[-600:]}"
        return f"{wall:.2f} s wall (CLI, {conc} connections)"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def promptfoo_run(url: str, n: int, conc: int) -> str:
    folder = Path(tempfile.mkdtemp(prefix="anpord-w1-promptfoo-"))
    try:
        tests = "\n".join(f"  - vars: {{i: {i}}}" for i in range(n))
        (folder / "promptfooconfig.yaml").write_text(
            textwrap.dedent(f"""\
            prompts: ["ping {{{{i}}}}"]
            providers:
              - id: openai:chat:bench-model
                config: {{apiBaseUrl: "{url}", apiKey: "sk-local-bench"}}
            defaultTest:
              assert: [{{type: contains, value: ping}}]
            tests:
            """)
            + tests
            + "\n"
        )
        out = folder / "out.json"
        cmd = [
            "promptfoo",
            "eval",
            "--no-cache",
            "--no-write",
            "--no-table",
            "-j",
            str(conc),
            "-o",
            str(out),
        ]
        env = dict(os.environ, PROMPTFOO_DISABLE_TELEMETRY="1", PROMPTFOO_DISABLE_UPDATE="1")
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - t0
        try:
            stats = json.loads(out.read_text())["results"]["stats"]
            passed = f"{stats.get('successes')} passed, {stats.get('failures')} failed"
        except (OSError, ValueError, KeyError, TypeError):
            passed = f"no results: {(proc.stderr or proc.stdout).strip()[-300:]}"
        return f"{wall:.2f} s wall (CLI, -j {conc}, exit {proc.returncode}: {passed})"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _harness_child(url: str, n: int, conc: int) -> None:
    """``--child-harness``: the harness alone in this interpreter (a side's ``src``, a side's
    loop), its figures as JSON."""
    loop = os.environ.get("ANPORD_LOOP", "asyncio")
    if loop == "uvloop":
        import uvloop

        wall, cpu = uvloop.run(harness_alone(url, n, conc))
    else:
        wall, cpu = asyncio.run(harness_alone(url, n, conc))
    print(json.dumps({"wall_s": wall, "cpu_s": cpu, "loop": loop}))


def _compared(args: argparse.Namespace) -> int:
    """``--against`` / ``--loops``: every figure for every side, interleaved, side by side."""
    from _against import Side, Unsupported, describe, fastest, heading, interleaved, least, row, sides

    with sides(args) as columns:
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, model latency "
              f"{args.latency * 1000:.0f} ms; load {os.getloadavg()[0]:.2f}; best of {args.repeat} "
              "interleaved runs per side")
        print(f"sides: {describe(columns)}")
        print("bare client: aiohttp on asyncio's own loop, the same for every side (each side's column "
              "holds the runs made beside it; ratios to bare use the best of all)")
        server, url = start_server(args.latency)
        try:
            if PYCACHE is not None:
                for side in columns:
                    for agent in ("openai", "python"):
                        cli_run(url, 10, 10, agent, side.child_env())  # warm-up: fills the bytecode cache

            for size in args.sizes.split(","):
                n, conc = (int(x) for x in size.lower().split("x"))

                def bare(_side: Side) -> dict[str, Any]:
                    wall, cpu = asyncio.run(bare_client(url, n, conc))
                    return {"wall_s": wall, "cpu_s": cpu}

                def harness(side: Side) -> dict[str, Any]:
                    proc = subprocess.run(
                        [sys.executable, __file__, "--child-harness", url, str(n), str(conc)],
                        env=side.child_env(), capture_output=True, text=True, check=False)
                    if proc.returncode != 0:
                        raise Unsupported(f"harness alone failed: {proc.stderr.strip()[-300:]}")
                    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
                    return out

                def cli(agent: str) -> Any:
                    def run(side: Side) -> dict[str, Any]:
                        if "ANPORD_LOOP" in side.env and not side.has("ANPORD_LOOP"):
                            raise Unsupported(f"{side.label}: this revision has no ANPORD_LOOP setting")
                        wall, cpu, code, tail = cli_run(url, n, conc, agent, side.child_env())
                        return {"wall_s": wall, "cpu_s": cpu, "exit_code": code, "tail": tail}
                    return run

                scenarios = {"bare": bare, "harness": harness}
                if not args.skip_cli:
                    scenarios.update({"openai": cli("openai"), "python": cli("python")})
                got = interleaved(columns, args.repeat, scenarios)
                best_bare = min(r["wall_s"] for runs in got["bare"] if not isinstance(runs, str) for r in runs)

                def wall(kind: str, per_bare: bool = False) -> list[float | str | None]:
                    out: list[float | str | None] = []
                    for runs in got[kind]:
                        r = fastest(runs)
                        out.append("n/a" if isinstance(r, str) else r["wall_s"] / (best_bare if per_bare else 1))
                    return out

                def cpu_ms(kind: str) -> list[float | str | None]:
                    return [least(runs, lambda r: 1000 * r["cpu_s"] / n) for runs in got[kind]]

                print(f"\nN={n}, C={conc}  (latency-bound ideal {n / conc * args.latency:.2f} s; "
                      f"bare client best {best_bare:.2f} s; load {os.getloadavg()[0]:.2f})")
                print(heading(columns))
                print(row("bare aiohttp client, wall s", wall("bare"), "{:.3f}"))
                print(row("  CPU ms per request", cpu_ms("bare"), "{:.3f}"))
                print(row("harness alone, wall s", wall("harness"), "{:.3f}"))
                print(row("  CPU ms per trial", cpu_ms("harness"), "{:.3f}"))
                for kind, name in (("openai", "anpord eval, openai:"), ("python", "anpord eval, Python agent")):
                    if kind in got:
                        print(row(f"{name}, wall s", wall(kind), "{:.3f}"))
                        print(row("  × bare", wall(kind, per_bare=True), "{:.2f}", "×"))
                        print(row("  CPU ms per trial (start-up incl.)", cpu_ms(kind), "{:.3f}"))
                for kind, results in got.items():
                    for side, r in zip(columns, map(fastest, results)):
                        if isinstance(r, str):
                            print(f"  note: {kind}, {side.label}: not run — {r}")
                        elif r.get("exit_code") not in (0, None):
                            print(f"  note: {kind}, {side.label}: exit {r['exit_code']}: {r.get('tail')}")
        finally:
            stop_server(server)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--sizes", default="1000x100,5000x500", help="NxC pairs, comma-separated")
    ap.add_argument("--skip-cli", action="store_true")
    ap.add_argument("--skip-others", action="store_true", help="do not run inspect-ai / promptfoo")
    ap.add_argument("--judge", action="store_true", help="also run the CLI with a judge on every case")
    ap.add_argument("--no-bytecode-cache", action="store_true",
                    help="CLI runs compile every module from source (PYTHONDONTWRITEBYTECODE=1)")
    from _against import add_arguments

    add_arguments(ap)
    ap.add_argument("--child-harness", nargs=3, metavar=("URL", "N", "C"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    resource.setrlimit(resource.RLIMIT_NOFILE, (65536, 65536)) if resource.getrlimit(
        resource.RLIMIT_NOFILE
    )[1] >= 65536 else None
    if args.child_harness:
        url, n, conc = args.child_harness
        _harness_child(url, int(n), int(conc))
        return 0
    global PYCACHE
    if not args.no_bytecode_cache:
        PYCACHE = Path(tempfile.mkdtemp(prefix="anpord-w1-pycache-"))
    if args.against or args.loops:
        try:
            return _compared(args)
        finally:
            if PYCACHE is not None:
                shutil.rmtree(PYCACHE, ignore_errors=True)
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, model latency {args.latency * 1000:.0f} ms"
    )
    print("CLI runs: bytecode " + ("compiled from source each run" if PYCACHE is None else "cached"))
    server, url = start_server(args.latency)
    try:
        if PYCACHE is not None and not args.skip_cli:
            for agent in ("openai", "python", "judge") if args.judge else ("openai", "python"):
                cli_run(url, 10, 10, agent)  # warm-up: fills the bytecode cache
        for size in args.sizes.split(","):
            n, conc = (int(x) for x in size.lower().split("x"))
            ideal = n / conc * args.latency
            print(f"\nN={n}, C={conc}  (latency-bound ideal {ideal:.2f} s)")
            bare, bare_cpu = asyncio.run(bare_client(url, n, conc))
            print(
                f"  bare aiohttp client:  {bare:.2f} s wall  ({n / bare:,.0f} req/s; "
                f"{bare_cpu / n * 1000:.2f} ms CPU per request)"
            )
            wall, cpu = asyncio.run(harness_alone(url, n, conc))
            print(
                f"  harness alone:        {wall:.2f} s wall  ({wall / bare:.2f}x bare; "
                f"{cpu / n * 1000:.2f} ms CPU per trial in harness + client)"
            )
            if not args.skip_cli:
                results = {}
                for agent, name in (("openai", "openai: harness"), ("python", "Python agent")):
                    cli, cli_cpu, code, tail = results[agent] = cli_run(url, n, conc, agent)
                    print(
                        f"  anpord eval, {name + ':':<16} {cli:.2f} s wall  ({cli / bare:.2f}x bare; "
                        f"{cli_cpu / n * 1000:.2f} ms CPU per trial, start-up included; exit {code}: {tail})"
                    )
                if args.judge:
                    judged, judged_cpu, code, tail = cli_run(url, n, conc, "judge")
                    cli = results["openai"][0]
                    waves = n / conc * args.latency  # one more model latency per case
                    print(
                        f"  anpord eval + judge:  {judged:.2f} s wall  (+{judged - cli:.2f} s = "
                        f"{(judged - cli) / waves:.2f}x one model latency per case; "
                        f"{judged_cpu / n * 1000:.2f} ms CPU per trial; exit {code}: {tail})"
                    )
            if not args.skip_others:
                others(url, n, conc)
    finally:
        stop_server(server)
        if PYCACHE is not None:
            shutil.rmtree(PYCACHE, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
