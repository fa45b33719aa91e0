"""Python agents and cancellation, each proved by a real ``anpord eval`` run: an agent that
swallows its CancelledError is abandoned and the run still ends (also on SIGTERM), and an agent
that raises CancelledError itself has crashed, not been cancelled."""

from __future__ import annotations

import signal
import subprocess
import time
from typing import Any

from project_support import END, eval_file

SWALLOWER = """
import asyncio, pathlib

async def swallow(turn):
    pathlib.Path("started").write_text("yes")
    while True:
        try:
            await asyncio.sleep(100)
        except asyncio.CancelledError:
            pass

async def shielded(turn):
    for _ in range(3):
        try:
            await asyncio.shield(asyncio.sleep(1000))
        except asyncio.CancelledError:
            pass
    while True:
        try:
            await asyncio.sleep(1000)
        except BaseException:
            pass

async def raiser(turn):
    raise asyncio.CancelledError()

async def sleeper(turn):
    await asyncio.sleep(100)
"""


def _project(make_project: Any, agent: str, timeout: int) -> Any:
    return make_project({
        "agents/stubborn.py": SWALLOWER,
        "evals/one.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                await t.send("hi")
                {END}
        """),
    }, config=f"""
from anpord import define_eval_config
config = define_eval_config(harness="python:agents.stubborn:{agent}", timeout={timeout})
""")


def test_an_agent_that_swallows_its_cancellation_is_abandoned_and_the_run_ends(make_project: Any) -> None:
    project = _project(make_project, "swallow", 2)
    run = project.run(timeout=60)  # the run used to live on, for ever
    assert run.code == 1, run.output
    result = run.result("one")
    assert result["verdict"] == "timed_out"
    assert result["reason"].startswith("timed out after 2s; the agent ignored its cancellation for 1s")
    assert any(line.startswith("the agent ignored its cancellation") for line in run.trial("one")["logs"])
    assert run.run_json()["status"] == "finished"


def test_an_agent_that_swallows_cancellation_through_shield_leaves_no_asyncio_report(make_project: Any) -> None:
    # Each cancelled shield leaves its inner task running, and the agent starts another while
    # the run shuts down: none of them is reported "destroyed but pending" after the closing line.
    project = _project(make_project, "shielded", 2)
    run = project.run(timeout=60)
    assert run.code == 1, run.output
    assert run.result("one")["verdict"] == "timed_out"
    assert "Task was destroyed" not in run.output, run.output


def test_a_cancel_the_test_asks_for_ends_the_turn_even_if_the_agent_ignores_it(make_project: Any) -> None:
    project = _project(make_project, "swallow", 60)
    project.write({"evals/one.eval.py": eval_file(f"""
        @define_eval
        async def test(t):
            live = await t.start("hi")
            while not Path("started").exists():
                await asyncio.sleep(0.01)
            t.check(await live.cancel(), equals(True)).label("accepted")
            t.check((await live.result()).status, equals("cancelled")).label("settles cancelled")
            {END}
    """)})
    run = project.run(timeout=60)
    assert run.result("one")["verdict"] == "passed", run.output
    assert any(line.startswith("the agent ignored its cancellation") for line in run.trial("one")["logs"])


def test_sigterm_ends_a_run_whose_agent_swallows_its_cancellation(make_project: Any) -> None:
    project = _project(make_project, "swallow", 300)
    proc = project.popen()
    try:
        started = project.path("started")
        for _ in range(600):
            if started.exists() or proc.poll() is not None:
                break
            time.sleep(0.05)
        assert started.exists(), proc.communicate()
        proc.send_signal(signal.SIGTERM)  # one signal: the run's own, orderly stop
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError("one SIGTERM did not end the run") from None
    assert proc.returncode == 143, err
    assert "Interrupted" in out + err


def test_an_agent_raising_cancelled_error_itself_fails_its_turn(make_project: Any) -> None:
    project = make_project({
        "agents/stubborn.py": SWALLOWER,
        "evals/own.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                await t.send("hi")
                t.succeeded()
                {END}
        """),
        "evals/asked.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                live = await t.start("hi")
                await asyncio.sleep(0.2)
                t.check(await live.cancel(), equals(True)).label("accepted")
                t.check((await live.result()).status, equals("cancelled")).label("settles cancelled")
                {END}
        """),
    })
    run = project.run("own", "--harness", "python:agents.stubborn:raiser")
    result = run.result("own")
    assert result["verdict"] == "failed", run.output
    assert "agent raised CancelledError although its turn was not cancelled" in result["reason"]
    # A cancellation the test asked for is still a cancel.
    run = project.run("asked", "--harness", "python:agents.stubborn:sleeper")
    assert run.result("asked")["verdict"] == "passed", run.output
