"""Verdict order: skipped > void > timed_out > failed > void-from-check > scored > passed; a case
that checked nothing fails; an assertion that raised never passes; a raising case or agent fails
its trial and the run goes on."""

from __future__ import annotations

from typing import Any

import pytest
from project_support import END, Run, eval_file

# A check that could not measure, the way a judge that cannot answer settles its handle.
VOID_CHECK = 't.check("x", equals("x"))._settle(status="void", message="the judge did not answer")'

CASES = {
    "skip_over_failure": """
        @define_eval
        async def test(t):
            t.check(1, equals(2))
            t.skip("later")
    """,
    "timeout_over_failure": """
        @define_eval(timeout=0.3)
        async def test(t):
            t.check(1, equals(2))
            await asyncio.sleep(5)
    """,
    "failure_over_void_check": f"""
        @define_eval
        async def test(t):
            {VOID_CHECK}
            t.check(1, equals(2)).label("the failing gate")
    """,
    "void_check_over_scored": f"""
        @define_eval
        async def test(t):
            t.check(1, equals(1))
            t.check("abc", similarity("xyz")).at_least(0.9)
            {VOID_CHECK}
    """,
    "scored_over_passed": """
        @define_eval
        async def test(t):
            t.check(1, equals(1))
            t.check("abc", similarity("abd")).at_least(0.9).label("near")
    """,
    "passed": f"""
        @define_eval
        async def test(t):
            await t.send("echo hi")
            t.check(t.reply, includes("hi")).soft(0.5)
            {END}
    """,
    "checked_nothing": """
        @define_eval
        async def test(t):
            await t.send("echo hi")
    """,
    "checked_nothing_empty": """
        @define_eval
        async def test(t):
            pass
    """,
    "raising_soft_assertion": """
        @define_eval
        async def test(t):
            await t.send("echo hi")
            t.events_satisfy("boom", lambda events: 1 / 0).soft().label("raising predicate")
    """,
    "raising_soft_matcher": """
        @define_eval
        async def test(t):
            t.check(3, satisfies(lambda v: v / 0, "divides")).soft().label("raising matcher")
    """,
    "body_raises": """
        @define_eval
        async def test(t):
            t.check(1, equals(1))
            raise ValueError("the test body broke")
    """,
    "body_exits": """
        import sys

        @define_eval
        async def test(t):
            t.check(1, equals(1))
            sys.exit(3)
    """,
    "body_interrupts": """
        @define_eval
        async def test(t):
            t.check(1, equals(1))
            raise KeyboardInterrupt
    """,
    "sync_body_exits": """
        def body(t):
            t.check(1, equals(1))
            raise SystemExit("bye")

        case = define_eval(body)
    """,
    "sync_body": f"""
        @define_eval
        def test(t):
            {END}
    """,
    "agent_raises": """
        @define_eval
        async def test(t):
            await t.send("raise")
            t.check(1, equals(1))
    """,
    "void_sandbox": """
        from anpord import Variant

        MARKER = Path(__file__).with_name("validate-ran")

        def validate(context):
            MARKER.write_text("ran")
            return True

        suite = define_suite(
            cases=[define_eval(prompt="echo hi", validate=validate)],
            variants=[Variant(name="needs-secret", secrets=["ANPORD_CORE_TEST_UNSET_SECRET"])],
            source=files({"a.txt": "a"}),
        )
    """,
}

EXPECTED = {
    "skip_over_failure": "skipped",
    "timeout_over_failure": "timed_out",
    "failure_over_void_check": "failed",
    "void_check_over_scored": "void",
    "scored_over_passed": "scored",
    "passed": "passed",
    "checked_nothing": "failed",
    "checked_nothing_empty": "failed",
    "raising_soft_assertion": "failed",
    "raising_soft_matcher": "failed",
    "body_raises": "failed",
    "body_exits": "failed",
    "body_interrupts": "failed",
    "sync_body_exits": "failed",
    "sync_body": "passed",
    "agent_raises": "failed",
    "void_sandbox/0000": "void",
}


@pytest.fixture(scope="module")
def run(make_module_project: Any) -> Run:
    project = make_module_project({f"evals/{name}.eval.py": eval_file(body) for name, body in CASES.items()})
    result = project.run("--max-concurrency", "8")
    assert result.code == 1, result.output
    return result


def test_each_verdict(run: Run) -> None:
    got = {case: verdict for case, verdict in run.verdicts().items()}
    assert got == EXPECTED, {c: run.result(c)["reason"] for c in got if got[c] != EXPECTED.get(c)}


def test_reasons(run: Run) -> None:
    assert run.result("skip_over_failure")["reason"] == "later"
    assert "timed out after 0.3s" in run.result("timeout_over_failure")["reason"]
    assert run.result("failure_over_void_check")["reason"].startswith("the failing gate")
    assert "did not answer" in run.result("void_check_over_scored")["reason"]
    assert run.result("scored_over_passed")["reason"].startswith("near")
    assert run.result("checked_nothing")["reason"] == "this case checked nothing"
    assert run.result("checked_nothing_empty")["reason"] == "this case checked nothing"
    assert "ValueError: the test body broke" in run.result("body_raises")["reason"]
    assert "agent exploded" in run.result("agent_raises")["reason"]
    # SystemExit and KeyboardInterrupt from a test fail that trial, not the run.
    assert run.result("body_exits")["reason"] == "SystemExit: 3"
    assert run.result("body_interrupts")["reason"] == "KeyboardInterrupt"
    assert run.result("sync_body_exits")["reason"] == "SystemExit: bye"
    assert "sys.exit(3)" in run.trial("body_exits")["traceback"]
    assert "ANPORD_CORE_TEST_UNSET_SECRET" in run.result("void_sandbox/0000")["reason"]


def test_an_assertion_that_raised_never_passes(run: Run) -> None:
    for case, label in [("raising_soft_assertion", "raising predicate"), ("raising_soft_matcher", "raising matcher")]:
        record = run.assertions(case)[label]
        assert record["status"] == "error", record
        assert record["kind"] == "soft"
        assert "ZeroDivisionError" in record["message"]
        assert "raised" in run.result(case)["reason"]


def test_void_trials_run_no_checks(run: Run) -> None:
    assert run.result("void_sandbox/0000")["assertions"] == []
    assert run.run_dir is not None
    project_folder = run.run_dir.parents[2]
    assert (project_folder / "evals" / "skip_over_failure.eval.py").is_file()
    assert not (project_folder / "evals" / "validate-ran").exists()


def test_console_and_totals(run: Run) -> None:
    last = run.stdout.strip().splitlines()[-1]
    # failed + timed_out, then scored, void, skipped
    assert last == "2 passed, 11 failed, 1 scored, 2 void, 1 skipped", run.stdout


def test_an_agent_that_cannot_start_is_void(make_project: Any) -> None:
    project = make_project(
        {
            "evals/failed_then_void.eval.py": eval_file("""
                @define_eval
                async def test(t):
                    t.check(1, equals(2))
                    await t.send("hi")
            """),
            "evals/swallowed.eval.py": eval_file("""
                @define_eval
                async def test(t):
                    try:
                        await t.send("hi")
                    except Exception as exc:
                        t.log(f"caught {type(exc).__name__}")
                    t.check(1, equals(1))
            """),
            "evals/skip_wins.eval.py": eval_file("""
                @define_eval
                async def test(t):
                    try:
                        await t.send("hi")
                    except Exception:
                        t.skip("no agent here")
            """),
        },
        config="from anpord import define_eval_config\nconfig = define_eval_config()\n",
    )
    run = project.run("--json")
    assert run.code == 1, run.output  # void fails the gate
    assert run.result("failed_then_void")["verdict"] == "void"
    assert "no harness" in run.result("failed_then_void")["reason"]
    # Catching the error does not turn an agent that never started into a pass.
    assert run.result("swallowed")["verdict"] == "void", run.result("swallowed")
    assert run.result("skip_wins")["verdict"] == "skipped"
    assert run.json()["totals"]["void"] == 2
