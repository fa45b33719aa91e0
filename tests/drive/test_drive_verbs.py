"""The drive API (``t``), sessions and live turns, against the example agents in real runs."""

from __future__ import annotations

from typing import Any

import pytest
from project_support import END, Run, assert_passed, eval_file

CASES = {
    "send": f"""
        import dataclasses

        @define_eval
        async def test(t):
            assert t.reply is None
            assert t.events == []
            turn = await t.send("weather Paris")
            assert turn.status == "completed"
            assert turn.message == "It is Sunny in Paris."
            assert t.reply == "It is Sunny in Paris."
            assert turn.session_id == t.session_id
            assert isinstance(t.session_id, str) and t.session_id
            assert turn.error is None
            assert [c.name for c in turn.tool_calls] == ["get_weather"]
            assert turn.tool_calls[0].input == {{"city": "Paris"}}
            assert turn.tool_calls[0].output["forecast"] == "Sunny"
            assert turn.input_requests == []
            assert turn.expect_ok() is turn
            types = [e.type for e in t.events]
            for wanted in ("session.started", "turn.started", "message.completed", "tool.called",
                           "tool.result", "turn.completed"):
                assert wanted in types
            assert [e.type for e in turn.events] == [e.type for e in t.events]
            try:
                turn.message = "changed"
            except dataclasses.FrozenInstanceError:
                frozen = True
            else:
                frozen = False
            assert frozen
            data = await t.send("json")
            assert data.data == {{"city": "Brooklyn", "temp": 21, "tags": ["sunny", "warm"]}}
            assert json.loads(data.message)["temp"] == 21
            {END}
    """,
    "history": f"""
        @define_eval
        async def test(t):
            await t.send("echo one")
            await t.send("echo two")
            turn = await t.send("history")
            messages = json.loads(turn.message)
            assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]
            assert messages[0]["content"] == "echo one"
            assert messages[1]["content"] == "echo: echo one"
            assert messages[-1]["content"] == "history"
            again = json.loads((await t.send("history")).message)
            assert len(again) == 7
            {END}
    """,
    "live": f"""
        from anpord.drive import EventNotSeen

        @define_eval(timeout=10)
        async def test(t):
            # A turn of ten minutes: a cancel that did not stop it would time the trial out.
            live = await t.start("slow 600")
            assert not live.done
            event = await live.wait_for_event("progress", data={{"step": 1}})
            assert event.data["step"] == 1
            assert await live.cancel() is True
            turn = await live.result()
            assert turn.status == "cancelled"
            assert await live.cancel() is False
            t.event("turn.cancelled").label("cancelled event")
            t.not_event("progress", data={{"step": 2}}).label("never finished")

            quick = await t.start("slow 0.01")
            seen = await quick.wait_for_event("progress", data={{"step": satisfies(lambda n: n == 2)}})
            assert seen.data["step"] == 2
            done = await quick.result()
            assert done.status == "completed" and done.message == "finished slowly"

            late = await t.start("slow 0.01")
            try:
                await late.wait_for_event("progress", data={{"step": 99}})
            except EventNotSeen as exc:
                missed = str(exc)
            else:
                missed = ""
            assert "settled before" in missed
            assert (await late.result()).status == "completed"
            {END}
    """,
    "cancel": f"""
        @define_eval(timeout=10)
        async def test(t):
            assert await t.cancel() == "no_active_turn"
            live = await t.start("slow 5")
            await live.wait_for_event("progress")
            assert await t.cancel() == "accepted"
            turn = await live.result()
            assert turn.status == "cancelled"
            assert await t.cancel() == "no_active_turn"
            after = await t.send("echo still here")
            assert after.message == "echo: echo still here"
            {END}
    """,
    "cancel_tool": f"""
        @define_eval(timeout=10)
        async def test(t):
            live = await t.start("slow_tool 5")
            await live.wait_for_event("tool.called", data={{"name": "wait"}})
            assert await live.cancel()
            turn = await live.result()
            assert turn.status == "cancelled"
            turn.called_tool("wait", status="failed").label("the tool saw the cancel")
            turn.event("tool.result", data={{"name": "wait", "error": "cancelled"}}).label("cancelled result")
            turn.not_event("message.completed", data={{"role": "assistant"}}).label("no answer")
            {END}
    """,
    "send_file": f"""
        @define_eval
        async def test(t):
            turn = await t.send_file("Summarise this", "note.txt")
            assert turn.message == "Summarise this | note.txt | data:text/plain;base64 | the note's text"
            other = await t.send_file("Again", "note.txt", media_type="text/markdown")
            assert "| data:text/markdown;base64 |" in other.message
            {END}
    """,
    "hitl": f"""
        from anpord.drive import InputRequest

        @define_eval
        async def test(t):
            turn = await t.send("approve /tmp/a")
            assert turn.status == "waiting"
            assert turn.message is None
            t.parked().label("parked")
            assert [r.tool_name for r in turn.input_requests] == ["delete_file"]
            assert len(t.pending_input_requests) == 1
            req = await t.require_input_request(tool_name="delete_file", input={{"path": "/tmp/a"}},
                                                prompt="Delete")
            assert isinstance(req, InputRequest)
            assert req.option_ids == ["approve", "deny"]
            assert req.options[0] == {{"id": "approve", "label": "Yes"}}
            done = await t.respond(req.respond("approve"))
            assert done.status == "completed"
            assert t.reply == "you chose approve"
            assert t.pending_input_requests == []
            t.event("input.resolved", data={{"request_id": req.request_id, "option_id": "approve"}}).label("resolved")

            await t.send("approve /tmp/b")
            req = await t.require_input_request(option_ids=["approve", "deny"])
            assert (await t.respond((req, "deny"))).message == "you chose deny"

            await t.send("two")
            assert sorted(r.tool_name for r in t.pending_input_requests) == ["book_flight", "send_email"]
            email = await t.require_input_request(tool_name="send_email")
            partial = await t.respond(email.respond("deny"))
            assert partial.status == "waiting"
            assert [r.tool_name for r in t.pending_input_requests] == ["book_flight"]
            flight = await t.require_input_request(tool_name="book_flight", input={{"to": "LIS"}})
            assert (await t.respond(flight.respond("approve"))).message == "email=deny flight=approve"

            await t.send("two")
            both = await t.respond_all("approve")
            assert both.message == "email=approve flight=approve"
            assert t.pending_input_requests == []
            {END}
    """,
    "gate_zero": """
        @define_eval
        async def test(t):
            await t.send("echo no questions")
            await t.require_input_request()
            t.log("GATE-ZERO-CONTINUED")
    """,
    "gate_two": """
        @define_eval
        async def test(t):
            await t.send("two")
            await t.require_input_request(prompt="the")
            t.log("GATE-TWO-CONTINUED")
    """,
    "sessions": f"""
        @define_eval
        async def test(t):
            a = t.new_session()
            b = t.new_session()
            assert len({{a.session_id, b.session_id, t.session_id}}) == 3
            await a.send("echo first")
            history_a = json.loads((await a.send("history")).message)
            history_b = json.loads((await b.send("history")).message)
            assert len(history_a) == 3 and history_a[0]["content"] == "echo first"
            assert history_b == [{{"role": "user", "content": "history"}}]
            assert a.reply.startswith("[") and b.reply.startswith("[")
            assert t.reply is None  # the primary session sent nothing
            assert all(e.data["session_id"] == a.session_id for e in a.events)
            t.event("session.started", count=2).label("run sees both sessions")
            t.message_includes("echo: echo first").label("run sees session a")
            b.not_event("message.completed", data={{"text": "echo: echo first"}}).label("b does not see a")
            {END}
    """,
    "log_skip": """
        @define_eval
        async def test(t):
            await t.send("echo before skipping")
            t.log("LOG-LINE-XYZ")
            t.check(1, equals(2))
            t.skip("not today")
            t.log("AFTER-SKIP")
    """,
}


@pytest.fixture(scope="module")
def run(make_module_project: Any) -> Run:
    files = {f"evals/drive/{name}.eval.py": eval_file(body) for name, body in CASES.items()}
    files["evals/drive/note.txt"] = "the note's text"
    project = make_module_project(files)
    result = project.run("--verbose", "--max-concurrency", "8")
    assert result.code == 1, result.output  # gate_zero and gate_two fail on purpose
    return result


@pytest.mark.parametrize("case", ["send", "history", "live", "cancel", "cancel_tool", "send_file", "hitl", "sessions"])
def test_drive_verbs_work(run: Run, case: str) -> None:
    assert_passed(run, f"drive/{case}")


def test_require_input_request_fails_when_none_match(run: Run) -> None:
    line = run.result("drive/gate_zero")
    assert line["verdict"] == "failed"
    assert "found 0" in line["reason"]
    assert "GATE-ZERO-CONTINUED" not in run.trial("drive/gate_zero")["logs"]  # a gate stops the test


def test_require_input_request_fails_when_two_match(run: Run) -> None:
    line = run.result("drive/gate_two")
    assert line["verdict"] == "failed"
    assert "found 2" in line["reason"]
    assert "GATE-TWO-CONTINUED" not in run.trial("drive/gate_two")["logs"]


def test_skip_wins_and_log_is_kept(run: Run) -> None:
    line = run.result("drive/log_skip")
    assert line["verdict"] == "skipped"
    assert line["reason"] == "not today"
    logs = run.trial("drive/log_skip")["logs"]
    assert "LOG-LINE-XYZ" in logs
    assert "AFTER-SKIP" not in logs
    assert "LOG-LINE-XYZ" in run.stdout  # --verbose streams t.log


def test_log_is_quiet_without_verbose(make_project: Any) -> None:
    project = make_project({"evals/log_skip.eval.py": eval_file(CASES["log_skip"])})
    result = project.run()
    assert result.code == 0, result.output  # a skipped trial is not a failure
    assert "LOG-LINE-XYZ" not in result.stdout
    assert "LOG-LINE-XYZ" in result.trial("log_skip")["logs"]
    assert result.stdout.strip().splitlines()[-1] == "0 passed, 0 failed, 1 skipped"
