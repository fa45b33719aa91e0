"""What the runs list and a grid say about a run, through real runs and the real ``anpord view``:
the Δ caption names the baseline actually compared with (chosen with ``anpord baseline set``, or
each cell's first reading), an older run is never compared with a later baseline, a finished run's
badge shows how its trials went, and a crashed run lasts until it stopped, not until its death
was noticed."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from typing import Any

from project_support import anpord_command, eval_file, run_env
from view_support import cell_path, view_server, wait_for

FLIP = """
import os
from pathlib import Path

async def agent(turn):
    counter = Path(os.environ["FLIP_COUNTER"])
    n = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(n + 1))
    return "Sunny" if n != 1 else "Rain"   # the second run fails
"""

SKY = eval_file("""
    @define_eval
    async def test(t):
        await t.send("sky?")
        t.check(t.reply, includes("Sunny"))
""")


def badge(page: str, run_id: str) -> str:
    row = re.search(rf'<tr class="run" data-run="{run_id}">(.*?)</tr>', page, re.S)
    assert row is not None, page
    found = re.search(r'<span class="badge ([^"]*)"', row.group(1))
    assert found is not None, row.group(1)
    return found.group(1)


def caption(page: str) -> str | None:
    found = re.search(r'<span class="baseline-note">(.*?)</span>\s*</p>', page, re.S)
    return re.sub(r"<[^>]+>", "", found.group(1)) if found else None


def test_the_caption_and_badges_say_what_happened(make_project: Any, tmp_path: Any) -> None:
    project = make_project({"agents/flip.py": FLIP, "evals/sky.eval.py": SKY})
    env = {"FLIP_COUNTER": str(tmp_path / "n")}
    runs = [project.run("--harness", "python:agents.flip:agent", env=env).run_dir for _ in range(3)]
    first, failing, last = (r.name for r in runs)  # type: ignore[union-attr]
    void = project.run("--harness", "command:no-such-agent-program").run_dir.name  # type: ignore[union-attr]

    with view_server(project.folder) as server:
        status, _, page = server.get(f"/runs/{last}")
        assert status == 200
        assert caption(page) == f"Δ: against each cell's first reading, the earliest run that measured it ({first})."
        _, _, runs_page = server.get("/")
        assert badge(runs_page, first) == "s-finished o-healthy"
        assert badge(runs_page, failing) == "s-finished o-unhealthy"  # 0% passed
        assert badge(runs_page, void) == "s-finished o-unhealthy"  # every trial void
        assert 'title="unhealthy: 0% passed"' in runs_page
        _, _, page = server.get(f"/runs/{failing}")  # its own page's badge says the same
        assert '<span class="badge s-finished o-unhealthy" title="unhealthy: 0% passed">finished</span>' in page

    done = subprocess.run([*anpord_command(), "baseline", "set", failing], cwd=project.folder,
                          env=run_env(), capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    with view_server(project.folder) as server:
        _, _, page = server.get(f"/runs/{last}")
        assert caption(page) == f"Δ: against the baseline set with anpord baseline set ({failing})."
        assert 'class="delta up"' in page
        _, _, cell = server.get(cell_path(last, "sky", "python:agents.flip:agent/default"))
        assert f"against <a href=\"/runs/{failing}\">{failing}</a> (0%; set with anpord baseline set)" in cell
        # The first run started before the chosen baseline: it is not compared with it.
        _, _, page = server.get(f"/runs/{first}")
        assert caption(page) is None and 'class="delta' not in page, page


QUICK = eval_file("""
    @define_eval
    async def test(t):
        await t.send("hi")
""")
STUCK = eval_file("""
    @define_eval
    async def test(t):
        await asyncio.sleep(120)
""")


def test_a_crashed_run_lasts_until_it_stopped(make_project: Any) -> None:
    project = make_project({"evals/a_quick.eval.py": QUICK, "evals/b_stuck.eval.py": STUCK})
    proc = project.popen("--max-concurrency", "1", "--timeout", "300")
    try:
        def one_trial_written() -> bool:
            run_dir = project.latest_run_dir()
            results = run_dir / "results.jsonl" if run_dir is not None else None
            return results is not None and results.is_file() and results.read_text().count("\n") >= 1

        wait_for(one_trial_written, timeout=60)
        killed_at = time.time()
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    run_dir = project.latest_run_dir()
    assert run_dir is not None
    with view_server(project.folder) as server:  # the view marks it crashed as it starts
        _, _, runs_page = server.get("/")
        assert badge(runs_page, run_dir.name) == "s-crashed"
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "crashed"
    (trial,) = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert trial["started_at"] + trial["duration"] <= record["finished_at"] <= killed_at
