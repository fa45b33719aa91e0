"""Edge cases of the Python harness and the trial runner, each proved by a real ``anpord eval`` run:
cancelling a live turn at once, sync agents stuck past their timeout, text printed without a
newline, workspace snapshots off the event loop, deadlines, and one text for structured messages."""

from __future__ import annotations

import os
from typing import Any

from core_support import END, assert_passed, eval_file


def test_a_live_turn_cancelled_right_after_start_settles_cancelled(make_project: Any) -> None:
    project = make_project({"evals/cancel.eval.py": eval_file(f"""
        @define_eval
        async def test(t):
            live = await t.start("slow 5")
            t.check(await live.cancel(), equals(True)).label("live.cancel() accepted")
            t.check((await live.result()).status, equals("cancelled")).label("live.cancel() settles")
            live = await t.start("slow 5")
            t.check(await t.cancel(), equals("accepted")).label("t.cancel() accepted")
            t.check((await live.result()).status, equals("cancelled")).label("t.cancel() settles")
            t.check((await t.send("hello")).message, equals("echo: hello")).label("the session goes on")
            {END}
    """)})
    run = project.run()
    assert_passed(run, "cancel")
    assert run.result("cancel")["duration"] < 4, "the cancelled turns ran on"


HANGING_SYNC_AGENT = """
import time

def agent(turn):
    if turn.input == "hang":
        time.sleep(30)
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
    assert run.wall < 20


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


def test_the_workspace_snapshot_does_not_stall_other_trials(make_project: Any) -> None:
    project = make_project({
        "evals/big.eval.py": eval_file("""
            from anpord import directory

            def validate(context):
                Path(__file__).with_name("validated").write_text("yes")
                return context.exists("new.txt")

            case = define_eval(prompt="workspace new.txt", source=directory("../big"), validate=validate,
                               timeout=60)
        """),
        "evals/ticker.eval.py": eval_file(f"""
            @define_eval(timeout=60)
            async def test(t):
                flag = Path(__file__).with_name("validated")
                worst = 0.0
                start = last = time.monotonic()
                while not flag.exists() and last - start < 50:
                    await asyncio.sleep(0.005)
                    now = time.monotonic()
                    worst, last = max(worst, now - last), now
                t.check(flag.exists(), equals(True)).label("the declarative trial ran meanwhile")
                t.check(worst, satisfies(lambda w: w < 0.4, "the loop never stalled")).label("loop lag")
                {END}
        """),
    })
    big = project.path("big")
    big.mkdir()
    blob = os.urandom(1 << 20)
    for i in range(320):  # 320 MiB to digest: about a second on the loop
        (big / f"f{i}.bin").write_bytes(blob)
    run = project.run("--max-concurrency", "2", timeout=120)
    assert_passed(run, "ticker")
    assert run.verdicts()["big"] == "passed", run.output


def test_the_deadline_counts_from_when_the_timer_starts(make_project: Any) -> None:
    project = make_project(
        {
            "evals/deadline.eval.py": eval_file(f"""
                @define_eval(each=[0, 1], source=files({{}}), timeout=10)
                async def test(t, row):
                    t.check(t.deadline - time.time(), satisfies(lambda r: r > 9.5, "a full budget")).label("budget")
                    await asyncio.sleep(1.5)  # holds the only sandbox slot meanwhile
                    {END}
            """),
        },
        config=(
            "from anpord import define_eval_config\n"
            "config = define_eval_config(harness='python:agents.kit:agent', max_sandboxes=1)\n"
        ),
    )
    run = project.run()
    for case_id in run.by_case():
        assert_passed(run, case_id)


def test_a_body_that_finished_as_its_deadline_passed_is_not_timed_out(make_project: Any) -> None:
    project = make_project({"evals/blocking.eval.py": eval_file(f"""
        @define_eval(timeout=0.5)
        async def test(t):
            time.sleep(1)  # blocks the loop past the deadline, then finishes in the same step
            {END}
    """)})
    run = project.run()
    assert_passed(run, "blocking")


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
