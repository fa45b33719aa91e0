"""Ctrl-C: a real run gets SIGINT; scheduling stops, finished trials are kept, exit 130."""

from __future__ import annotations

import json
import signal
import time
from typing import Any

from proc_support import wait_until
from project_support import END, eval_file

# Far more than run before the interrupt lands (a minute at one at a time); an interrupted run
# costs none of the rest.
SLOW = eval_file(f"""
    @define_eval(each=list(range(100)))
    async def test(t, row):
        await t.send("slow 0.6")
        {END}
""")


def test_ctrl_c_keeps_finished_trials_and_exits_130(make_project: Any) -> None:
    project = make_project({"evals/slow.eval.py": SLOW})
    proc = project.popen("--max-concurrency", "1")
    try:
        wait_until(lambda: project.finished_trials() >= 2, "two finished trials", proc=proc)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, (stdout, stderr)
    assert "Traceback" not in stderr

    run_dir = project.latest_run_dir()
    assert run_dir is not None
    finished = [json.loads(x) for x in (run_dir / "results.jsonl").read_text().splitlines() if x.strip()]
    assert 2 <= len(finished) < 100  # scheduling stopped: a grace period, not the remaining cases
    from anpord.results import read_run

    reading = read_run(run_dir)
    assert reading.problems == []
    for trial in reading.trials:  # each finished trial's events were written before its line
        assert [e.type for e in reading.events(trial)][:2] == ["session.started", "turn.started"]
    passed = [line for line in finished if line["verdict"] == "passed"]
    assert len(passed) >= 2

    info = json.loads((run_dir / "run.json").read_text())
    assert info["status"] == "interrupted"
    assert info["exit_code"] == 130
    assert info["totals"]["trials"] == len(finished)

    closing = stdout.strip().splitlines()[-1]
    failed = sum(1 for line in finished if line["verdict"] in ("failed", "timed_out"))
    assert closing.startswith(f"{len(passed)} passed, {failed} failed"), stdout


def test_a_second_ctrl_c_forces_the_exit(make_project: Any) -> None:
    project = make_project({"evals/stuck.eval.py": eval_file("""
        @define_eval
        async def test(t):
            Path(__file__).with_name("started").write_text("yes")
            try:
                await t.send("slow 30")
            finally:
                await asyncio.sleep(30)  # a body that ignores the first interrupt's cancellation
    """)})
    proc = project.popen()
    try:
        wait_until(project.path("evals/started").exists, "the trial to start", proc=proc)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.3)
        # Still stopping: the body holds out for 30 s, past the grace period.
        assert proc.poll() is None
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=25)  # forced: not the body's 30 s
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130
    # Even a forced exit leaves run.json saying so, not "running".
    run_dir = project.latest_run_dir()
    assert run_dir is not None
    info = json.loads((run_dir / "run.json").read_text())
    assert info["status"] == "interrupted" and info["forced"] is True
    assert info["totals"]["trials"] == 0
