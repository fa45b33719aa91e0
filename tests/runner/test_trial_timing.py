"""When a trial's clock runs: the deadline counts from the timer's start, a body finishing as it
passes is not timed out, and a workspace snapshot never stalls other trials."""

from __future__ import annotations

import os
import time
from typing import Any

import pytest
from project_support import END, assert_passed, eval_file

from anpord.workspace import snapshot


@pytest.mark.slow
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
                # Half of what the digest took on this machine just now: on the loop, it would
                # hold the loop that long; a loaded machine slows both.
                bound = max(0.4, float(Path(__file__).with_name("digest").read_text()) / 2)
                flag = Path(__file__).with_name("validated")
                worst = 0.0
                start = last = time.monotonic()
                while not flag.exists() and last - start < 50:
                    await asyncio.sleep(0.005)
                    now = time.monotonic()
                    worst, last = max(worst, now - last), now
                t.check(flag.exists(), equals(True)).label("the declarative trial ran meanwhile")
                t.check(worst, satisfies(lambda w: w < bound, "the loop never stalled")).label("loop lag")
                {END}
        """),
    })
    big = project.path("big")
    big.mkdir()
    blob = os.urandom(1 << 20)
    for i in range(320):  # 320 MiB to digest: about a second on the loop
        (big / f"f{i}.bin").write_bytes(blob)
    started = time.monotonic()
    snapshot(big)
    project.path("evals/digest").write_text(str(time.monotonic() - started))
    run = project.run("--max-concurrency", "2", timeout=120)
    assert_passed(run, "ticker")
    assert run.verdicts()["big"] == "passed", run.output


def test_the_deadline_counts_from_when_the_timer_starts(make_project: Any) -> None:
    project = make_project(
        {
            "evals/deadline.eval.py": eval_file(f"""
                # Counted from the plan, the second trial's budget would be at most 7.5 s.
                @define_eval(each=[0, 1], source=files({{}}), timeout=10)
                async def test(t, row):
                    t.check(t.deadline - time.time(), satisfies(lambda r: r > 8, "a full budget")).label("budget")
                    await asyncio.sleep(2.5)  # holds the only sandbox slot meanwhile
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
