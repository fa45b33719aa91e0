"""Every drive verb over HTTP: ``anpord serve`` runs the example agent in a subprocess and the real
``anpord eval --harness http://...`` drives it; the checks read verdicts, events and artifacts."""

from __future__ import annotations

import pytest
from project_support import END, Project, Run, assert_passed, eval_file
from serve_support import Server


@pytest.fixture(scope="module")
def run(served_project: tuple[Project, Server]) -> Run:
    project, server = served_project
    marker = project.path("cancelled-agent-wrote-this.txt")
    project.write({
        "evals/note.txt": "hello file",
        "evals/send.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                turn = await t.send("plan Paris")
                turn.expect_ok()
                assert turn.message == "Paris, NY: Sunny"
                assert t.reply == "Paris, NY: Sunny"
                t.tool_order(["lookup", "get_weather"])
                t.called_tool("get_weather", input={{"city": "Paris"}}, output={{"forecast": "Sunny"}},
                              status="completed", count=1)
                t.event("message.completed", data={{"role": "assistant", "text": "Paris, NY: Sunny"}})
                {END}
        """),
        "evals/live_cancel.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                live = await t.start("slow 30")
                event = await live.wait_for_event("progress", data={{"step": 1}})
                assert event.session_id == t.session_id
                assert await live.cancel() is True
                turn = await live.result()
                assert turn.status == "cancelled", turn.status
                t.not_event("progress", data={{"step": 2}})
                t.event("turn.cancelled", count=1)
                again = await t.send("weather Oslo")
                assert again.message == "It is Sunny in Oslo."
                {END}
        """),
        "evals/t_cancel.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                live = await t.start("write_after {marker} 1.0")
                assert await t.cancel() == "accepted"
                turn = await live.result()
                assert turn.status == "cancelled", turn.status
                assert await t.cancel() == "no_active_turn"
                await asyncio.sleep(1.5)
                assert not Path({str(marker)!r}).exists(), "the cancelled agent went on"
                {END}
        """),
        "evals/approve.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                parked = await t.send("approve old.txt")
                assert parked.status == "waiting", parked.status
                t.parked()
                req = await t.require_input_request(tool_name="delete_file", input={{"path": "old.txt"}})
                assert req.option_ids == ["approve", "deny"]
                assert req.options[0]["label"] == "Yes"
                assert req.prompt == "Delete the file?"
                turn = await t.respond(req.respond("deny"))
                assert turn.message == "you chose deny"
                assert t.pending_input_requests == []
                t.event("input.resolved", data={{"request_id": req.request_id, "option_id": "deny"}}, count=1)
                {END}
        """),
        "evals/respond_all.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                parked = await t.send("two")
                assert parked.status == "waiting"
                assert sorted(r.tool_name for r in t.pending_input_requests) == ["book_flight", "send_email"]
                turn = await t.respond_all("approve")
                assert turn.message == "email=approve flight=approve"
                t.event("input.resolved", count=2)
                {END}
        """),
        "evals/partial_respond.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                await t.send("two")
                email = await t.require_input_request(tool_name="send_email")
                first = await t.respond((email, "deny"))
                assert first.status == "waiting", first.status
                flight = await t.require_input_request(tool_name="book_flight")
                done = await t.respond({{"request_id": flight.request_id, "option_id": "approve"}})
                assert done.message == "email=deny flight=approve"
                {END}
        """),
        "evals/sessions.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                await t.send("hello")
                await t.send("history")
                assert json.loads(t.reply) == [
                    {{"role": "user", "content": "hello"}},
                    {{"role": "assistant", "content": "echo: hello"}},
                    {{"role": "user", "content": "history"}},
                ]
                other = t.new_session()
                await other.send("history")
                assert json.loads(other.reply) == [{{"role": "user", "content": "history"}}]
                assert other.session_id != t.session_id
                {END}
        """),
        "evals/structured.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                turn = await t.send("json")
                assert turn.data == {{"city": "Brooklyn", "temp": 21, "tags": ["sunny", "warm"]}}
                t.output_equals({{"city": "Brooklyn", "temp": 21, "tags": ["sunny", "warm"]}})
                attached = await t.send_file("read this", "note.txt")
                assert attached.message == "read this | note.txt | data:text/plain;base64 | hello file"
                {END}
        """),
        "evals/usage.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                await t.send("combo Rome broken")
                t.event("note", data={{"level": "info", "text": "looked it up"}})
                t.called_tool("broken_tool", status="failed")
                t.output_equals({{"city": "Rome", "forecast": "Sunny", "high": 21}})
                {END}
        """),
        "evals/model.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                await t.send("model")
                assert t.reply == "small"
                {END}
        """),
        "evals/workspace.eval.py": eval_file(f"""
            @define_eval(source=files({{"seed.txt": "abc"}}))
            async def test(t):
                await t.send("edit")
                t.called_tool("read_file", output="abc")
                assert (t.workspace / "result.txt").read_text() == "ABC"
                {END}
        """),
        "evals/printing.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                await t.send("print")
                t.event("log", data={{"message": "AGENT-STDOUT-LINE", "stream": "stdout"}})
                t.event("log", data={{"message": "AGENT-STDERR-LINE", "stream": "stderr"}})
                {END}
        """),
        "evals/raising.eval.py": eval_file("""
            @define_eval
            async def test(t):
                turn = await t.send("raise")
                assert turn.status == "failed"
        """),
        "evals/exit_in_task.eval.py": eval_file("""
            @define_eval
            async def test(t):
                await t.send("exit_in_task")
                t.check(t.reply, equals("answered anyway"))
        """),
    })
    return project.run("--harness", server.url, "--model", "small", "--json")


PASSING = ["send", "live_cancel", "t_cancel", "approve", "respond_all", "partial_respond", "sessions",
           "structured", "usage", "model", "workspace", "printing"]


@pytest.mark.parametrize("case_id", PASSING)
def test_each_drive_verb_passes_over_http(run: Run, case_id: str) -> None:
    assert_passed(run, case_id)
    assert run.result(case_id)["variant"].startswith("http://127.0.0.1:")


def test_the_run_holds_exactly_the_expected_verdicts(run: Run) -> None:
    assert run.code == 1, run.output  # the two failing agents below
    assert run.verdicts() == {**{c: "passed" for c in PASSING}, "raising": "failed", "exit_in_task": "failed"}


def test_a_cancelled_live_turn_and_the_next_one_have_the_shape_of_any_harness(run: Run) -> None:
    assert [e["type"] for e in run.events("live_cancel")] == [
        "session.started", "turn.started", "message.completed", "progress", "turn.cancelled",
        "session.waiting",
        "turn.started", "message.completed", "tool.called", "tool.result", "message.completed",
        "turn.completed", "session.waiting", "session.completed",
    ]


def test_input_requests_and_answers_are_recorded_once_each(run: Run) -> None:
    events = run.events("approve")
    asked = [e for e in events if e["type"] == "input.requested"]
    answered = [e for e in events if e["type"] == "input.resolved"]
    assert len(asked) == 1 and len(answered) == 1
    assert asked[0]["tool_name"] == "delete_file"
    assert asked[0]["options"] == [{"id": "approve", "label": "Yes"}, {"id": "deny", "label": "No"}]
    assert answered[0] == {**answered[0], "request_id": asked[0]["request_id"], "option_id": "deny"}
    # Every event carries the eval's session id, whatever the server called it.
    session_ids = {e.get("session_id") for e in events if e["type"] != "session.completed"}
    assert len(session_ids) == 1 and None not in session_ids


def test_usage_from_the_agent_is_summed_per_trial(run: Run) -> None:
    assert run.result("usage")["usage"] == {"input_tokens": 12, "output_tokens": 3, "cost": 0.002}


def test_what_the_agent_prints_reaches_the_trial_log(run: Run) -> None:
    logs = run.trial("printing")["logs"]
    assert "AGENT-STDOUT-LINE" in logs
    assert "[stderr] AGENT-STDERR-LINE" in logs
    assert "AGENT-STDOUT-LINE" not in run.stdout  # --json output stays clean


def test_an_agent_that_raises_fails_its_trial_with_its_traceback(run: Run) -> None:
    line = run.result("raising")
    assert line["verdict"] == "failed"
    assert line["reason"] == "agent raised RuntimeError: agent exploded"
    trial = run.trial("raising")
    # The server's traceback, carried by the turn's end, is the trial's own.
    assert trial["traceback"].startswith("Traceback (most recent call last):")
    assert 'raise RuntimeError("agent exploded")' in trial["traceback"]
    assert any(log.startswith("agent raised:\nTraceback") for log in trial["logs"])
    types = [e["type"] for e in run.events("raising")]
    assert "turn.failed" in types


def test_sys_exit_in_an_agents_task_fails_its_trial_and_the_server_lives_on(
    run: Run, served_project: tuple[Project, Server]
) -> None:
    line = run.result("exit_in_task")
    assert line["verdict"] == "failed"
    assert "SystemExit: 3" in line["reason"]
    _, server = served_project
    assert server.proc.poll() is None, server.output


def test_sessions_are_deleted_when_their_trials_end(
    run: Run, served_project: tuple[Project, Server]
) -> None:
    from serve_support import request

    _, server = served_project
    sessions = {e["session_id"] for e in run.events("sessions") if e.get("session_id")}
    assert len(sessions) == 2
    for sid in sessions:
        reply = request(server.url, "POST", f"/v1/sessions/{sid}/cancel")
        assert reply.status == 404, reply.body

