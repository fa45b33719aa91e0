"""Python agents at the edges, each proved by a real ``anpord eval`` run: a live turn cancelled at
once, sync agents stuck past their timeout, text printed without a newline, and one text for a
structured message everywhere."""

from __future__ import annotations

from typing import Any

from project_support import END, assert_passed, eval_file


def test_a_live_turn_cancelled_right_after_start_settles_cancelled(make_project: Any) -> None:
    project = make_project({"evals/cancel.eval.py": eval_file(f"""
        @define_eval
        async def test(t):
            # Turns of ten minutes: a cancel that did not take would time the trial out (10 s).
            live = await t.start("slow 600")
            t.check(await live.cancel(), equals(True)).label("live.cancel() accepted")
            t.check((await live.result()).status, equals("cancelled")).label("live.cancel() settles")
            live = await t.start("slow 600")
            t.check(await t.cancel(), equals("accepted")).label("t.cancel() accepted")
            t.check((await live.result()).status, equals("cancelled")).label("t.cancel() settles")
            t.check((await t.send("hello")).message, equals("echo: hello")).label("the session goes on")
            {END}
    """)})
    run = project.run()
    assert_passed(run, "cancel")


HANGING_SYNC_AGENT = """
import time

def agent(turn):
    if turn.input == "hang":
        time.sleep(600)  # a run that waited for it would not end within the test's bound
    return "done"
"""


def test_sync_agents_stuck_past_their_timeout_do_not_starve_later_trials(make_project: Any) -> None:
    project = make_project(
        {
            "agents/hanging.py": HANGING_SYNC_AGENT,
            "evals/pool.eval.py": eval_file(f"""
                @define_eval(each=["hang", "hang", "quick", "quick"])
                async def test(t, row):
                    t.check((await t.send(row)).message, equals("done"))
                    {END}
            """),
        },
        config=(
            "from anpord import define_eval_config\n"
            "config = define_eval_config(harness='python:agents.hanging:agent', timeout=2, max_concurrency=2)\n"
        ),
    )
    run = project.run()
    verdicts = [lines[0]["verdict"] for _, lines in sorted(run.by_case().items())]
    assert verdicts == ["timed_out", "timed_out", "passed", "passed"], run.output


PRINTING_AGENT = """
async def agent(turn):
    print(f"progress {turn.input}", end="")  # no newline: still the trial's log
    return "ok"
"""


def test_text_printed_without_a_newline_reaches_its_own_trial_log(make_project: Any) -> None:
    project = make_project(
        {
            "agents/printing.py": PRINTING_AGENT,
            "evals/print.eval.py": eval_file(f"""
                @define_eval(each=["a", "b", "c"])
                async def test(t, row):
                    await t.send(row)
                    print("body", end="")
                    {END}
            """),
        },
        config=(
            "from anpord import define_eval_config\n"
            "config = define_eval_config(harness='python:agents.printing:agent', max_concurrency=1)\n"
        ),
    )
    run = project.run("--json")
    assert run.code == 0, run.output
    rows = sorted(run.by_case())
    assert len(rows) == 3
    for case_id, row in zip(rows, "abc"):
        assert run.trial(case_id)["logs"] == [f"progress {row}body"], case_id
    assert "progress" not in run.stdout


ECHO_LAST_MESSAGE = """
async def agent(turn):
    return turn.messages[-1]["content"]
"""


def test_a_structured_message_has_one_text_everywhere(make_project: Any) -> None:
    project = make_project(
        {
            "agents/echo_last.py": ECHO_LAST_MESSAGE,
            "evals/text.eval.py": eval_file(f"""
                PARTS = {{"role": "user", "content": [
                    {{"type": "text", "text": "one"}},
                    {{"type": "image", "url": "x.png", "text": "not text"}},
                    {{"type": "text", "text": "two"}},
                ]}}

                @define_eval
                async def test(t):
                    for message, text in [({{"foo": [1, "é"]}}, '{{"foo":[1,"é"]}}'), (PARTS, "one\\ntwo"),
                                          ({{"text": "plain"}}, "plain"), ([1, 2], "[1,2]")]:
                        turn = await t.send(message)
                        user = [e for e in turn.events if e.type == "message.completed" and e.data["role"] == "user"]
                        t.check([e.data["text"] for e in user], equals([text])).label(f"event {{text}}")
                        t.check(turn.message, equals(text)).label(f"agent {{text}}")
                    {END}
            """),
        },
        config=(
            "from anpord import define_eval_config\n"
            "config = define_eval_config(harness='python:agents.echo_last:agent')\n"
        ),
    )
    run = project.run()
    assert_passed(run, "text")


def test_message_text() -> None:
    from anpord.events import message_text

    assert message_text("hi") == "hi"
    assert message_text({"content": "c", "text": "t"}) == "c"
    assert message_text({"text": "t"}) == "t"
    assert message_text({"content": [{"type": "text", "text": "a"}, {"type": "file"}, {"type": "text", "text": "b"}]}) == "a\nb"
    assert message_text({"content": {"k": 1}}) == '{"content":{"k":1}}'
    assert message_text(None) == "null"
