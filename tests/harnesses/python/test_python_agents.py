"""Python agents and deadlines: timeouts cancel the agent, sync agents run in threads, callable
objects, SystemExit from an agent, --harness pointing a suite at another agent."""

from __future__ import annotations

import json
from typing import Any

from project_support import END, assert_passed, eval_file


def test_timeout_sets_signal_cancels_the_agent_and_the_run_goes_on(make_project: Any) -> None:
    project = make_project()
    marker = project.path("agent-wrote-this.txt")
    flag = project.path("signal.json")
    project.write({
        "evals/slow.eval.py": eval_file(f"""
            @define_eval(timeout=0.4)
            async def test(t):
                t.check(1, equals(1))
                budget = t.deadline - time.time()
                try:
                    await t.send("write_after {marker} 1.0")
                finally:
                    Path({str(flag)!r}).write_text(json.dumps(
                        {{"signal": t.signal.is_set(), "budget": budget}}))
        """),
        # Outlives the moment the slow agent would have written its file, then looks for it.
        "evals/watcher.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                await asyncio.sleep(1.4)
                assert not Path({str(marker)!r}).exists(), "the timed-out agent kept running"
                assert not t.signal.is_set()
                {END}
        """),
    })
    run = project.run("--max-concurrency", "2")
    assert run.code == 1, run.output
    line = run.result("slow")
    assert line["verdict"] == "timed_out"
    assert "0.4" in line["reason"]
    seen = json.loads(flag.read_text())
    assert seen["signal"] is True
    assert 0 < seen["budget"] <= 0.4  # t.deadline is the trial's start + its timeout
    assert_passed(run, "watcher")
    assert not marker.exists()
    assert run.stdout.strip().splitlines()[-1] == "1 passed, 1 failed"  # timed out counts as failed


def test_sync_agents_run_concurrently_and_are_abandoned_on_timeout(make_project: Any) -> None:
    project = make_project()
    marker = project.path("sync-agent-wrote-this.txt")
    project.write({
        # Four blocking agents that each wait for all four to be running: they run side by side
        # or not at all.
        "evals/sleepy.eval.py": eval_file(f"""
            @define_eval(each=[1, 2, 3, 4])
            async def test(t, row):
                turn = await t.send("meet {project.path("meeting")} 4")
                assert turn.message == "met 4"
                {END}
        """),
        "evals/sync_api.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                turn = await t.send("tool")
                assert turn.message == "sync Sunny"
                t.called_tool("get_weather", input={{"city": "Paris"}}, status="completed")
                parked = await t.send("approve")
                assert parked.status == "waiting"
                req = await t.require_input_request(prompt="Proceed?")
                assert (await t.respond(req.respond("deny"))).message == "sync chose deny"
                assert (await t.send("hello")).message == "sync echo: hello (5 messages)"
                {END}
        """),
        "evals/stuck.eval.py": eval_file(f"""
            @define_eval(timeout=0.3)
            async def test(t):
                await t.send("sleep_then_write {marker} 0.8")
        """),
        # Blocked for ten minutes: a run that waited for it would not end within the test's bound.
        "evals/stuck_for_good.eval.py": eval_file("""
            @define_eval(timeout=0.3)
            async def test(t):
                await t.send("sleep 600")
        """),
    })
    run = project.run("--harness", "python:agents.kit:sync_agent", "--max-concurrency", "6", "--json")
    assert run.code == 1, run.output
    for key in ("0000", "0001", "0002", "0003"):
        assert_passed(run, f"sleepy/{key}")
    assert_passed(run, "sync_api")
    # The stuck threads were abandoned: the process did not wait for them...
    assert run.result("stuck")["verdict"] == "timed_out"
    assert run.result("stuck_for_good")["verdict"] == "timed_out"
    # ...and the first one's next call into the context raised instead of going on.
    assert not marker.exists()


def test_callable_objects_and_harness_override(make_project: Any) -> None:
    project = make_project({
        "evals/hello.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                await t.send("hi")
                t.check(t.reply, includes("says hi"))
                t.log(t.reply)
                {END}
        """),
    })
    for spec, reply in [
        ("python:agents.kit:callable_agent", "object says hi"),
        ("python:agents.kit:sync_callable_agent", "sync object says hi"),
    ]:
        run = project.run("--harness", spec)
        assert run.code == 0, run.output
        assert_passed(run, "hello")
        assert run.trial("hello")["logs"] == [reply]
        assert run.result("hello")["variant"].startswith(spec)
    # Without --harness the config's agent answers (and fails the check).
    run = project.run()
    assert run.code == 1
    assert run.result("hello")["verdict"] == "failed"
    assert "echo: hi" in json.dumps(run.result("hello")["assertions"])


def test_an_agent_that_exits_or_raises_fails_only_its_trial(make_project: Any) -> None:
    project = make_project({
        "evals/exits.eval.py": eval_file("""
            @define_eval
            async def test(t):
                await t.send("exit")
                t.succeeded()
        """),
        "evals/raises.eval.py": eval_file("""
            @define_eval
            async def test(t):
                turn = await t.send("raise")
                t.log(f"status={turn.status}")
        """),
        "evals/fine.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                await t.send("echo fine")
                t.succeeded()
                {END}
        """),
    })
    run = project.run("--max-concurrency", "1")
    assert run.code == 1, run.output
    exits = run.result("exits")
    assert exits["verdict"] == "failed"
    assert "SystemExit" in exits["reason"]
    raises = run.result("raises")
    assert raises["verdict"] == "failed"
    assert "RuntimeError: agent exploded" in raises["reason"]
    logs = run.trial("raises")["logs"]
    assert "status=failed" in logs
    assert any("Traceback" in entry and "agent exploded" in entry for entry in logs)
    assert_passed(run, "fine")
    assert len(run.results()) == 3
    assert "Traceback" not in run.stdout + run.stderr


def test_a_parked_sync_agent_does_not_starve_other_sessions(make_project: Any) -> None:
    project = make_project({
        "evals/parked.eval.py": eval_file(f"""
            @define_eval(timeout=5)
            async def test(t):
                first, second = t.new_session(), t.new_session()
                assert (await first.send("approve")).status == "waiting"
                # The only worker thread is parked in request_input; the second session still runs.
                assert (await second.send("hello")).message == "sync echo: hello (1 messages)"
                assert (await first.respond_all("approve")).message == "sync chose approve"
                {END}
        """),
    })
    run = project.run("--harness", "python:agents.kit:sync_agent", "--max-concurrency", "1")
    assert run.code == 0, run.output
    assert_passed(run, "parked")



def test_sys_exit_in_a_task_an_agent_or_test_started_fails_only_that_trial(
    make_project: Any,
) -> None:
    # asyncio lets SystemExit and KeyboardInterrupt out of any task and would stop the run.
    project = make_project({
        "evals/agent_task.eval.py": eval_file("""
            @define_eval
            async def test(t):
                await t.send("exit_in_task")
                t.message_includes("answered")
        """),
        "evals/test_task.eval.py": eval_file(f"""
            async def interrupt():
                raise KeyboardInterrupt

            @define_eval
            async def test(t):
                asyncio.ensure_future(interrupt())
                await asyncio.sleep(0.05)
                {END}
        """),
        "evals/fine.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                await t.send("echo fine")
                {END}
        """),
    })
    run = project.run("--max-concurrency", "1")
    assert run.code == 1, run.output
    agent_task = run.result("agent_task")
    assert agent_task["verdict"] == "failed", agent_task
    assert agent_task["reason"] == "a task it started raised SystemExit: 3", agent_task
    test_task = run.result("test_task")
    assert test_task["verdict"] == "failed", test_task
    assert test_task["reason"] == "a task it started raised KeyboardInterrupt", test_task
    assert "sys.exit(code)" in run.trial("agent_task")["traceback"]
    assert_passed(run, "fine")
    assert len(run.results()) == 3
    assert "Traceback" not in run.stdout + run.stderr


def test_an_exit_in_an_awaited_task_is_reported_as_the_exit(make_project: Any) -> None:
    project = make_project({
        "evals/awaited.eval.py": eval_file(f"""
            async def leave():
                await asyncio.sleep(0)
                sys.exit(4)

            @define_eval
            async def test(t):
                await asyncio.gather(leave())
                {END}
        """, imports="import sys"),
    })
    run = project.run()
    assert run.code == 1, run.output
    line = run.result("awaited")
    assert line["reason"] == "a task it started raised SystemExit: 4", line
    assert "sys.exit(4)" in run.trial("awaited")["traceback"]


def test_an_exit_in_a_task_that_outlives_its_trial_does_not_stop_the_run(
    make_project: Any,
) -> None:
    project = make_project({
        "evals/a_first.eval.py": eval_file(f"""
            async def leave_later():
                await asyncio.sleep(0.3)
                sys.exit(5)

            @define_eval
            async def test(t):
                asyncio.ensure_future(leave_later())
                {END}
        """, imports="import sys"),
        "evals/b_second.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                await asyncio.sleep(0.6)
                {END}
        """),
    })
    run = project.run("--max-concurrency", "1")
    assert run.code == 0, run.output
    assert_passed(run, "a_first")
    assert_passed(run, "b_second")
    # Not silent: asyncio reports the task's error, which says what happened.
    assert "a task raised SystemExit: 5 after its trial had ended" in run.stderr
