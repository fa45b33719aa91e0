"""What the benches of per-trial services (``mocks.py``, ``traces.py``) share: a throwaway project
run by the runner API in a child process of its own, a service started alone, and the figures.

Each scenario runs in a fresh child (``spawn``), so one scenario's imports and caches never help
another; ``paired`` alternates the two sides of a comparison and keeps each side's fastest run,
so a burst of load on a shared machine does not decide the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# BENCH_SRC: another checkout's src (a before/after comparison in one sitting).
SRC = Path(os.environ.get("BENCH_SRC") or Path(__file__).resolve().parents[1] / "src")

EVAL = '''
from anpord import define_eval
from anpord.expect import includes
{imports}

@define_eval(each=list(range({n})), id=lambda row: f"t{{row}}"{extra})
async def test(t, row):
    await t.send(f"hello {{row}}")
    t.check(t.reply, includes("hello"))
'''

CONFIG = '''
from anpord import Variant, define_eval_config
config = define_eval_config(max_concurrency={conc}, timeout=300, variants=[
    Variant(name="bench", harness={harness!r}{options})])
'''


def project(prefix: str, *, n: int, conc: int, harness: str, options: str = "", imports: str = "",
            extra: str = "", files: dict[str, str | bytes] | None = None) -> Path:
    """A project folder: ``n`` cases sending one message each to ``harness`` (where ``{folder}``
    stands for the project's folder) at ``conc``, with ``files`` (relative path → text or bytes)
    beside ``evals/``."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    (folder / "evals").mkdir()
    for rel, content in (files or {}).items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    (folder / "evals" / "evals.config.py").write_text(
        CONFIG.format(conc=conc, harness=harness.replace("{folder}", str(folder)), options=options))
    (folder / "evals" / "bench.eval.py").write_text(EVAL.format(n=n, imports=imports, extra=extra))
    return folder


def run_project(folder: Path, marker: bytes) -> dict[str, Any]:
    """Run every case of ``folder`` (artifacts on, no history), then delete it: wall time, the
    runner process's CPU, the totals, and how many recorded event lines hold ``marker``."""
    import resource

    os.chdir(folder)
    try:
        from anpord.runner import RunOptions, build_plan, execute, find_project, load_cases, select_files

        proj = find_project([])
        opts = RunOptions(history=False)
        plan = build_plan(proj, load_cases(select_files(proj, [])), opts)
        before = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.perf_counter()
        summary = execute(plan, opts, reporters=[]).summary
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_SELF)
        marked = 0
        for path in Path(summary.run_dir).rglob("*.ndjson"):
            with open(path, "rb") as f:
                marked += sum(marker in line for line in f)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return {"wall_s": wall, "runner_cpu_s": cpu, "totals": summary.totals, "marked": marked}
    finally:
        os.chdir("/")
        shutil.rmtree(folder, ignore_errors=True)


def service_context(variant: Any = None) -> Any:
    """A ``ServiceContext`` for a service started alone: no sandbox, logs and events dropped."""
    from anpord.authoring import Variant
    from anpord.runner._services import ServiceContext

    return ServiceContext(variant or Variant(), "bench", None, lambda _m: None, lambda _e: None)


def timings_ms(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    return {"mean_ms": 1000 * statistics.fmean(ordered), "p50_ms": 1000 * ordered[len(ordered) // 2],
            "p99_ms": 1000 * ordered[int(len(ordered) * 0.99)]}


def spawn(script: str, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """``script --child args...`` in a fresh interpreter with this checkout's ``src`` first: the
    JSON object its last line prints."""
    full = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])))
    full.update(env or {})
    out = subprocess.run([sys.executable, script, "--child", *args], env=full, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"bench child {args} failed:\n{out.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def paired(base: Callable[[], dict[str, Any]], other: Callable[[], dict[str, Any]],
           repeats: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Each side run ``repeats`` times, alternating; each side's fastest run."""
    runs: tuple[list[dict[str, Any]], list[dict[str, Any]]] = ([], [])
    for _ in range(max(repeats, 1)):
        runs[0].append(base())
        runs[1].append(other())
    return min(runs[0], key=lambda r: r["wall_s"]), min(runs[1], key=lambda r: r["wall_s"])


def header(what: str, detail: str) -> str:
    return f"{what} bench: {detail}; {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"


def arguments(doc: str, only: list[str]) -> argparse.ArgumentParser:
    """The options every service bench takes; a bench adds its own."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--concurrency", type=int, default=100)
    ap.add_argument("--setups", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each side of a ratio (the fastest counts)")
    ap.add_argument("--only", choices=only)
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    return ap
