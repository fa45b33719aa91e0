"""A drive call or gate written without ``await`` must never let a case pass."""

from __future__ import annotations

from typing import Any

from project_support import END, assert_passed, eval_file


def test_a_forgotten_await_fails_the_case(make_project: Any) -> None:
    project = make_project({
        "evals/require.eval.py": eval_file("""
            @define_eval
            async def test(t):
                await t.send("hello")
                t.require(t.reply, equals("definitely not this"))  # no await
                t.check("unreached", equals("unreached"))
        """),
        "evals/send.eval.py": eval_file("""
            @define_eval(each=["a", "b"])
            async def test(t, row):
                await t.send("hello")
                t.send("again")  # no await: never runs
                t.message_includes("echo")
        """),
        "evals/fine.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                await t.send("hello")
                handle = await t.require(t.reply, includes("echo"))
                t.check(handle.passed, equals(True)).label("require returns its handle")
                {END}
        """),
    })
    run = project.run()
    assert run.code == 1, run.output
    required = run.result("require")
    assert required["verdict"] == "failed"
    names = [a["name"] for a in required["assertions"]]
    assert names == ['equals("definitely not this")'], names  # the test stopped at the gate
    for key in ("send/0000", "send/0001"):  # every trial hears of it, not only the first
        sent = run.result(key)
        assert sent["verdict"] == "failed", sent
        assert "t.send(...) was called without await" in sent["reason"], sent["reason"]
    assert_passed(run, "fine")
