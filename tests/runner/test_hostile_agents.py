"""The runner under agents that misbehave in its own process: one that blocks the event loop,
changes the working folder, closes stdout and stderr, or prints without end — and signals that
land in a run's last moments. Each is a real ``anpord eval`` run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from project_support import END, eval_file


@pytest.mark.slow
def test_an_agent_blocking_the_loop_is_blamed_and_the_others_are_not_timed_out(make_project: Any) -> None:
    project = make_project({"evals/stall.eval.py": eval_file(f"""
        @define_eval(each=["block 5", "hi", "there", "you"], id=lambda row: row.split()[0])
        async def test(t, row):
            await t.send(row)
            t.succeeded()
            {END}
    """)})
    run = project.run("--timeout", "3", "--max-concurrency", "4", timeout=60)
    verdicts = run.verdicts()
    assert verdicts == {"stall/block": "timed_out", "stall/hi": "passed", "stall/there": "passed",
                        "stall/you": "passed"}, run.output
    reason = run.result("stall/block")["reason"]
    assert reason.startswith("timed out after 3s; its code blocked the event loop for ")
    assert "use a sync agent" in reason
    blocked = float(reason.split("for ")[1].split(" s")[0])
    assert 4.5 <= blocked <= run.wall, reason  # the five seconds, and no more than the run took


def test_a_sync_agent_that_blocks_blames_no_one(make_project: Any) -> None:
    project = make_project({"evals/sync.eval.py": eval_file(f"""
        @define_eval(each=["sleep 1.5", "hi"], id=lambda row: row.split()[0])
        async def test(t, row):
            await t.send(row)
            {END}
    """)}, config="""
from anpord import define_eval_config
config = define_eval_config(harness="python:agents.kit:sync_agent", timeout=10)
""")
    run = project.run()
    assert run.code == 0, run.output
    assert all("blocked the event loop" not in line for line in run.stdout.splitlines())
    assert not any("blocked the event loop" in x for x in run.result("sync/sleep")["logs"])


def test_output_paths_resolve_against_the_callers_folder_even_if_an_agent_moves(
    make_project: Any, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "reports").mkdir(parents=True)
    project = make_project({"evals/moves.eval.py": eval_file(f"""
        @define_eval
        async def test(t):
            await t.send("chdir {elsewhere}")
            {END}
    """)})
    (project.folder / "reports").mkdir()
    run = project.run("--junit", "reports/j.xml", "--json")
    assert run.code == 0, run.output
    assert json.loads(run.stdout)["totals"]["passed"] == 1  # the --json document is whole
    assert (project.folder / "reports" / "j.xml").is_file()
    assert not (elsewhere / "reports" / "j.xml").exists()
    run = project.run("--junit", "reports.xml")
    assert run.code == 0, run.output
    assert (project.folder / "reports.xml").is_file() and not (elsewhere / "reports.xml").exists()


def test_an_unwritable_junit_path_still_prints_the_json_document(make_project: Any) -> None:
    project = make_project({"evals/one.eval.py": eval_file(f"""
        @define_eval
        async def test(t):
            await t.send("hi")
            {END}
    """)})
    (project.folder / "reports").mkdir()
    (project.folder / "reports" / "j.xml").mkdir()  # a folder where the file should go
    run = project.run("--junit", "reports/j.xml", "--json")
    assert run.code == 2
    assert json.loads(run.stdout)["totals"]["passed"] == 1
    assert "cannot write --junit reports/j.xml" in run.stderr


def test_an_agent_that_closes_stdout_and_stderr_does_not_spoil_the_run(make_project: Any) -> None:
    project = make_project({"evals/closes.eval.py": eval_file(f"""
        @define_eval(each=["close_std", "a", "b", "c"], id=lambda row: row)
        async def test(t, row):
            await t.send(row)
            t.succeeded()
            {END}
    """)})
    run = project.run("--max-concurrency", "1")
    assert run.code == 0, run.output
    assert run.stdout.rstrip().splitlines()[-1] == "4 passed, 0 failed"
    run = project.run("--json", "--max-concurrency", "1")
    assert run.code == 0, run.output
    assert json.loads(run.stdout)["totals"]["passed"] == 4


def test_a_python_agent_printing_without_end_is_capped(make_project: Any) -> None:
    project = make_project({"evals/flood.eval.py": eval_file(f"""
        @define_eval
        async def test(t):
            await t.send("flood 20")
            {END}
    """)})
    run = project.run(timeout=120)
    assert run.code == 0, run.output
    trial = run.trial("flood")
    kept = sum(len(line) for line in trial["logs"])
    assert kept <= (1 << 20) + 200, kept
    assert trial["logs"][-1].startswith("[") and "bytes of log not kept: cap 1048576 bytes per trial" in trial["logs"][-1]
    assert run.run_dir is not None
    assert (run.run_dir / "results.jsonl").stat().st_size < 200_000  # the long log went to trials/
    assert sum(p.stat().st_size for p in run.run_dir.rglob("*") if p.is_file()) < 3 << 20


def test_an_eval_file_declaring_latin_1_is_read_as_python_reads_it(make_project: Any) -> None:
    body = eval_file("""
        @define_eval
        async def test(t):
            await t.send("café")
            t.check(t.reply, includes("café"))
    """)
    project = make_project({})
    path = project.folder / "evals" / "latin.eval.py"
    path.write_bytes(("# -*- coding: latin-1 -*-\r\n" + body.replace("\n", "\r\n")).encode("latin-1"))
    run = project.run()
    assert run.code == 0, run.output
    assert run.verdicts() == {"latin": "passed"}


LATE_SIGNALS = """
import os, signal
from anpord import define_eval_config
from anpord.results import ReporterBase


class LateSignals(ReporterBase):
    def on_run_end(self, summary, results):
        for name in os.environ["LATE_SIGNALS"].split(","):
            os.kill(os.getpid(), getattr(signal, name))


config = define_eval_config(harness="python:agents.kit:agent", timeout=10, reporters=[LateSignals()])
"""


@pytest.mark.parametrize(("signals", "code"), [("SIGTERM", 143), ("SIGINT", 130), ("SIGINT,SIGINT", 130),
                                               ("SIGHUP", 129)])
def test_a_signal_in_the_last_moments_ends_with_its_exit_code_and_a_final_run_json(
    make_project: Any, signals: str, code: int
) -> None:
    project = make_project({"evals/late.eval.py": eval_file(f"""
        @define_eval(each=[1, 2])
        async def test(t, row):
            await t.send("hi")
            {END}
    """)}, config=LATE_SIGNALS)
    run = project.run(env={"LATE_SIGNALS": signals})
    assert run.code == code, run.output
    info = run.run_json()
    assert info["status"] in ("finished", "interrupted") and info["exit_code"] == code
    assert info["totals"]["passed"] == 2
    assert "Traceback" not in run.stderr


def test_run_level_setup_and_teardown_run_once(make_project: Any, tmp_path: Path) -> None:
    log = tmp_path / "lifecycle.log"
    project = make_project({"evals/life.eval.py": eval_file(f"""
        @define_eval(each=list(range(6)))
        async def test(t, row):
            await t.send("hi")
            t.check(t.reply, includes("on the shared session"))
            {END}
    """)}, config="""
from anpord import define_eval_config
config = define_eval_config(harness="python:agents.kit:lifecycle_agent", timeout=10, max_concurrency=3)
""")
    run = project.run(env={"LIFECYCLE_LOG": str(log)})
    assert run.code == 0, run.output
    lines = log.read_text().splitlines()
    assert [line.split()[0] for line in lines] == ["setup", "teardown"]
    assert lines[1].startswith("teardown after 6 turns")
    assert "Unclosed" not in run.stderr


def test_a_failing_setup_makes_its_trials_void_with_the_reason(make_project: Any, tmp_path: Path) -> None:
    project = make_project({"evals/life.eval.py": eval_file(f"""
        @define_eval(each=[1, 2])
        async def test(t, row):
            await t.send("hi")
            {END}
    """)}, config="""
from anpord import define_eval_config
config = define_eval_config(harness="python:agents.kit:lifecycle_agent", timeout=10)
""")
    run = project.run(env={"LIFECYCLE_LOG": str(tmp_path / "log"), "LIFECYCLE_FAIL": "setup"})
    assert run.code == 1
    for line in run.results():
        assert line["verdict"] == "void"
        assert line["reason"] == (
            "harness python:agents.kit:lifecycle_agent could not be set up: "
            "ConnectionError: cannot reach the model server"
        )
    assert not (tmp_path / "log").exists()  # no teardown for what never set up
