"""The view's page times on a 10,000-trial run, measured in headless Chromium.

    python bench/view_pages.py [--cases 1000] [--variants 2] [--trials 5] [--history 2] [--keep DIR]
                               [--unfiled]

Writes a project with ``--history`` earlier runs and one run of cases × variants × trials trials
(10,000 by default) straight through ``anpord.results.artifacts.RunWriter`` (each trial with a
dozen events, a few assertions, some failing, some void, a tool output of 20 KB every hundredth
trial), files them in the run store as ``anpord eval`` does while it runs (here with ``anpord db
rebuild``, timed), starts the real ``anpord view`` on a free port, and opens the pages in headless
Chromium. ``--unfiled`` leaves the store empty, so the view's first page also files the three runs
(what happens after run folders were copied in by hand).

For each page the figure is the browser's own navigation timing
(``performance.getEntriesByType("navigation")``): **server** is the time to the first byte
(``responseStart - requestStart``), **load** the time from the start of the navigation to the end
of the load event — what a person waits for; **goto** is the same wait seen from the test
driver (Playwright's ``page.goto`` until the load event), a cross-check. "first" is the first request for a page of the newest run
(the server reads the newest run as it starts, so a person's first click is served from memory),
"again" a later one, "cold" a run read during the request itself: an older run nobody opened
yet, and a trial page requested the moment a fresh server prints its URL. Target: ≤ 1 s load for the grid and the
trial page, cold included.

Needs Debian's chromium (``/usr/bin/chromium``) and ``pip install playwright`` (never
``playwright install``: the browser is the system's).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

SRC = Path(__file__).resolve().parents[1] / "src"
sys.path.insert(0, str(SRC))

from anpord.events import Event
from anpord.results import AssertionRecord, CellRecord, ErrorInfo, RunRecord, TrialResult
from anpord.results._model import summarize_cell, usage_totals
from anpord.results.artifacts import RunWriter

TARGET_S = 1.0
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]
CONFIG = 'from anpord import define_eval_config\nconfig = define_eval_config(harness="python:agents:agent")\n'


def _trial(case_id: str, variant: str, index: int, rng: random.Random, t0: float) -> tuple[TrialResult, list[Event]]:
    roll = rng.random()
    verdict = "passed" if roll < 0.8 else "failed" if roll < 0.93 else "void" if roll < 0.97 else "scored"
    city = f"City {rng.randint(1, 500)}"
    answer = f"It is Sunny in {city}." if verdict == "passed" else f"Rain all day in {city}."
    output = "x" * 20_000 if rng.random() < 0.01 else {"city": city, "forecast": "Sunny", "high": 21}
    ts = t0 + index
    events = [
        Event("session.started", {"session_id": "s1"}, ts),
        Event("turn.started", {"session_id": "s1"}, ts + 0.001),
        Event("message.completed", {"role": "user", "text": f"weather {city}"}, ts + 0.002),
        Event("tool.called", {"call_id": "c1", "name": "lookup", "input": {"city": city}}, ts + 0.01),
        Event("tool.result", {"call_id": "c1", "name": "lookup", "output": f"{city}, NY", "status": "completed", "error": None}, ts + 0.02),
        Event("tool.called", {"call_id": "c2", "name": "get_weather", "input": {"city": city}}, ts + 0.03),
        Event("tool.result", {"call_id": "c2", "name": "get_weather", "output": output, "status": "completed", "error": None}, ts + 0.05),
        Event("note", {"level": "info", "text": "looked it up"}, ts + 0.06),
        Event("usage", {"input_tokens": 120, "output_tokens": 30, "cost": 0.0002}, ts + 0.07),
        Event("message.completed", {"role": "assistant", "text": answer}, ts + 0.08),
        Event("turn.completed", {"session_id": "s1"}, ts + 0.09),
        Event("session.completed", {"session_id": "s1"}, ts + 0.1),
    ]
    ok = verdict == "passed"
    assertions = [
        AssertionRecord("succeeded", "gate", "passed", 1.0),
        AssertionRecord("called_tool", "gate", "passed", 1.0, expected={"name": "get_weather"}, actual=["lookup", "get_weather"]),
        AssertionRecord("message_includes", "gate", "passed" if ok else "failed", 1.0 if ok else 0.0,
                        expected="Sunny", actual=answer, message="" if ok else "'Sunny' not in the reply"),
    ]
    result = TrialResult(
        case_id=case_id, variant=variant, trial=index, verdict=verdict,  # type: ignore[arg-type]
        reason="" if ok else "message_includes 'Sunny'" if verdict == "failed" else "judge could not answer",
        duration=0.1 + rng.random(), started_at=ts, assertions=assertions,
        usage={"input_tokens": 120, "output_tokens": 30, "cost": 0.0002},
        logs=[f"asked about {city}"],
        error=ErrorInfo("agent", "RuntimeError: boom", "Traceback (most recent call last):\n  ...\nRuntimeError: boom", "evals/x.eval.py:3")
        if rng.random() < 0.005 else None,
    )
    return result, events


def write_run(project: Path, run_id: str, *, cases: int, variants: int, trials: int, seed: int,
              started_at: float) -> int:
    """One finished run folder of cases × variants × trials synthetic trials; returns the count."""
    rng = random.Random(seed)
    run_dir = project / ".anpord" / "runs" / run_id
    writer = RunWriter(run_dir)
    labels = [f"python/model-{v}" for v in range(variants)]
    case_ids = [f"weather/city_{c:04d}" for c in range(cases)]
    record = RunRecord(run_id=run_id, status="running", started_at=started_at,
                       cells=[CellRecord(c, v, trials, 60.0) for c in case_ids for v in labels],
                       variants=[{"label": v} for v in labels])
    writer.write_run(record)
    results: list[TrialResult] = []
    for c in case_ids:
        for v in labels:
            cell = []
            for i in range(trials):
                result, events = _trial(c, v, i, rng, started_at)
                writer.write_trial(result, events)
                cell.append(result)
            results.extend(cell)
    writer.close()
    summaries = {}
    for i in range(0, len(results), trials):
        s = summarize_cell(results[i : i + trials])
        summaries[(s.case_id, s.variant)] = s
    for cell in record.cells:
        cell.summary = summaries[(cell.case_id, cell.variant)]
    counts: dict[str, int] = {}
    for r in results:
        counts[r.verdict] = counts.get(r.verdict, 0) + 1
    record.status = "finished"
    record.finished_at = started_at + 60
    record.totals = {"trials": len(results), **counts}
    record.usage = usage_totals(results)
    record.exit_code = 1
    writer.write_run(record)
    return len(results)


def make_project(folder: Path, *, cases: int, variants: int, trials: int, history: int) -> str:
    (folder / "evals").mkdir(parents=True)
    (folder / "evals" / "evals.config.py").write_text(CONFIG)
    now = time.time()
    for h in range(history):
        write_run(folder, f"20250101-00000{h}-aaaaa{h}", cases=cases, variants=variants, trials=trials,
                  seed=h, started_at=now - 86400 * (history - h))
    run_id = "20250102-000000-bbbbbb"
    write_run(folder, run_id, cases=cases, variants=variants, trials=trials, seed=99, started_at=now)
    return run_id


def start_view(project: Path) -> tuple[subprocess.Popen[str], str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])))
    proc = subprocess.Popen([sys.executable, "-m", "anpord", "view", "--port", "0"], cwd=project, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    match = re.search(r"http://\S+", line)
    if match is None:
        proc.kill()
        raise SystemExit(f"anpord view did not print its URL: {line!r} {proc.stderr.read() if proc.stderr else ''}")
    return proc, match.group(0).rstrip("/")


def timing(page: Any, url: str) -> dict[str, float]:
    started = time.perf_counter()
    response = page.goto(url, wait_until="load")
    wall = time.perf_counter() - started
    if response is None or response.status != 200:
        raise SystemExit(f"{url}: HTTP {response.status if response else '?'}: the figures would be of an error page")
    nav = page.evaluate(
        "() => { const n = performance.getEntriesByType('navigation')[0];"
        " return {server: n.responseStart - n.requestStart, load: n.loadEventEnd - n.startTime,"
        " url: n.name}; }"
    )
    assert nav["url"] == url, (nav["url"], url)
    return {"server": nav["server"] / 1000, "load": nav["load"] / 1000, "wall": wall}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--variants", type=int, default=2)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--history", type=int, default=2, help="earlier runs of the same cells (baselines)")
    ap.add_argument("--keep", type=Path, help="write the project here and keep it")
    ap.add_argument("--unfiled", action="store_true", help="leave the runs out of the run store")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    folder = args.keep or Path(tempfile.mkdtemp(prefix="anpord-view-bench-")) / "project"
    started = time.perf_counter()
    run_id = make_project(folder, cases=args.cases, variants=args.variants, trials=args.trials, history=args.history)
    n = args.cases * args.variants * args.trials
    print(f"wrote {args.history + 1} runs of {n:,} trials in {time.perf_counter() - started:.1f}s: {folder}")
    if not args.unfiled:
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "anpord", "db", "rebuild"], cwd=folder, check=True,
                       env=dict(os.environ, PYTHONPATH=str(SRC)), stdout=subprocess.DEVNULL)
        print(f"filed them in the run store (anpord db rebuild) in {time.perf_counter() - started:.1f}s")
    else:
        print("left them out of the run store: the first page files them")
    proc, base = start_view(folder)
    rows: list[tuple[str, str, dict[str, float]]] = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page()
            case = "weather/city_0007"
            older = "20250101-000001-aaaaa1" if args.history >= 2 else run_id

            def trial_url(run: str, case_id: str, variant: str, index: int) -> str:
                return f"{base}/runs/{run}/trials/{quote(case_id)}?variant={quote(variant)}&trial={index}"

            pages = [
                ("runs list", "first", f"{base}/"),
                ("grid", "first", f"{base}/runs/{run_id}"),
                ("grid", "again", f"{base}/runs/{run_id}"),
                ("grid, page 7", "again", f"{base}/runs/{run_id}?page=7"),
                ("grid, failing + search", "again", f"{base}/runs/{run_id}?filter=failing&q=city_03"),
                ("grid, regressed", "again", f"{base}/runs/{run_id}?filter=regressed"),
                ("trial", "again", trial_url(run_id, case, "python/model-1", 3)),
                ("trial, another", "again", trial_url(run_id, "weather/city_0999", "python/model-0", 0)),
                ("cell + chart", "again", f"{base}/runs/{run_id}/cells/{quote(case)}?variant={quote('python/model-1')}"),
                ("trial, older run", "cold", trial_url(older, case, "python/model-0", 1)),
                ("grid, older run", "again", f"{base}/runs/{older}"),
                ("runs list", "again", f"{base}/"),
            ]
            for name, state, url in pages:
                rows.append((name, state, timing(page, url)))
            browser.close()
        # A fresh server, a trial page at once: the server may still be reading the newest run.
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page()
            proc, base = start_view(folder)
            rows.append(("trial, new server", "cold", timing(page, trial_url(run_id, case, "python/model-1", 3))))
            browser.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
        if args.keep is None:
            shutil.rmtree(folder.parent, ignore_errors=True)
    print(f"\n{n:,}-trial run ({args.cases} cases × {args.variants} variants × {args.trials} trials), "
          f"{args.history} earlier runs; target: load ≤ {TARGET_S:.1f}s for the grid and trial pages\n")
    print(f"{'page':<26}{'':<6}{'server':>9}{'load':>9}{'goto':>9}")
    for name, state, t in rows:
        flag = "" if t["load"] <= TARGET_S or not name.startswith(("grid", "trial")) else "  over target"
        print(f"{name:<26}{state:<6}{t['server']:>8.3f}s{t['load']:>8.3f}s{t['wall']:>8.3f}s{flag}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
