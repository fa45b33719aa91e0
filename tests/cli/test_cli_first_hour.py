"""What a new user meets in the first hour, each through a real ``anpord eval`` run: input-request
filters by display, a failed turn the test expected, a dataset as a list of cases, a soft score
that shows, the line that raised, running from inside a folder, a mistyped flag, and a suite whose
agent program is not installed."""

from __future__ import annotations

import json
from typing import Any

from project_support import END, assert_passed, eval_file

DISPLAY_AGENT = """
async def agent(turn):
    choice = await turn.request_input("Delete notes.txt?", tool_name="delete_file",
                                      input={"path": "notes.txt"}, display="Delete notes.txt")
    return f"chose {choice}"
"""


def test_an_input_request_is_found_by_its_display(make_project: Any) -> None:
    project = make_project({
        "agents/asks.py": DISPLAY_AGENT,
        "evals/display.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                await t.send("clean up")
                request = await t.require_input_request(display="Delete notes", tool_name="delete_file")
                assert request.display == "Delete notes.txt"
                await t.respond(request.respond("approve"))
                t.check(t.reply, equals("chose approve"))
                {END}
        """),
        "evals/display_miss.eval.py": eval_file("""
            @define_eval
            async def test(t):
                await t.send("clean up")
                await t.require_input_request(display="Rename")
        """),
    })
    run = project.run("--harness", "python:agents.asks:agent")
    assert_passed(run, "display")
    miss = run.result("display_miss")
    assert miss["verdict"] == "failed"
    assert "require_input_request(display='Rename')" in miss["reason"]
    assert "'display': 'Delete notes.txt'" in miss["reason"]


def test_a_turn_the_test_expected_to_fail_does_not_fail_the_trial(make_project: Any) -> None:
    project = make_project({
        "evals/graceful.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                turn = await t.send("raise")
                turn.expect_failed("agent exploded")
                {END}
        """),
        "evals/unexpected.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                turn = await t.send("raise")
                try:
                    turn.expect_ok()
                except Exception:
                    pass  # catching it does not make the failure expected
                {END}
        """),
        "evals/wrong_error.eval.py": eval_file("""
            @define_eval
            async def test(t):
                turn = await t.send("raise")
                turn.expect_failed("timed out")
        """),
        "evals/did_not_fail.eval.py": eval_file("""
            @define_eval
            async def test(t):
                turn = await t.send("hello")
                turn.expect_failed()
        """),
    })
    run = project.run()
    assert_passed(run, "graceful")
    gate = run.assertions("graceful")["expect_failed('agent exploded')"]
    assert gate["status"] == "passed"
    assert gate["actual"] == {"status": "failed", "error": "agent raised RuntimeError: agent exploded"}
    unexpected = run.result("unexpected")
    assert (unexpected["verdict"], unexpected["reason"]) == ("failed", "agent raised RuntimeError: agent exploded")
    assert run.result("wrong_error")["verdict"] == "failed"
    assert "expect_failed('timed out')" in run.result("wrong_error")["reason"]
    did_not = run.result("did_not_fail")
    assert did_not["verdict"] == "failed" and "turn 1 completed, it did not fail" in did_not["reason"]


def test_a_list_of_cases_bound_to_a_name_is_a_dataset(make_project: Any) -> None:
    project = make_project({
        "evals/sql.eval.py": eval_file("""
            ROWS = [("alpha", "echo: alpha"), ("beta", "echo: beta")]

            def case(prompt, reply):
                @define_eval
                async def test(t):
                    await t.send(prompt)
                    t.check(t.reply, equals(reply))
                return test

            cases = [case(prompt, reply) for prompt, reply in ROWS]
        """),
        "evals/nothing.eval.py": eval_file("rows = [1, 2, 3]\n"),
    })
    run = project.run("sql")
    assert run.code == 0, run.output
    assert run.verdicts() == {"sql/0000": "passed", "sql/0001": "passed"}
    nothing = project.run("nothing")
    assert nothing.code == 2
    assert "binds no eval" in nothing.stderr and "@define_eval(each=rows)" in nothing.stderr
    assert "cases = [define_eval(...) for row in rows]" in nothing.stderr


def test_a_soft_score_without_a_threshold_shows_in_the_console(make_project: Any) -> None:
    project = make_project({"evals/tone.eval.py": eval_file(f"""
        @define_eval
        async def test(t):
            await t.send("hello")
            t.check(t.reply, similarity("something else entirely")).soft()
            {END}
    """)})
    run = project.run()
    assert run.code == 0, run.output
    line = run.result("tone")
    assert line["verdict"] == "passed" and line["score"] is not None
    assert f"score {line['score']:.2f}" in run.stdout.splitlines()[0]


def test_a_crash_in_the_test_body_shows_the_eval_files_line(make_project: Any) -> None:
    project = make_project({"evals/crash.eval.py": eval_file("""
        @define_eval
        async def test(t):
            await t.send("hello")
            total = len(t.reply) + None
    """)})
    run = project.run()
    assert run.code == 1
    out = run.stdout.splitlines()
    assert "    error: TypeError: unsupported operand type(s) for +: 'int' and 'NoneType'" in out
    source = (project.folder / "evals" / "crash.eval.py").read_text().splitlines()
    line = next(i for i, text in enumerate(source, 1) if "total = " in text)
    assert f"    at evals/crash.eval.py:{line}" in out
    assert "      > total = len(t.reply) + None" in out


def test_no_argument_inside_the_evals_root_runs_the_current_folder(make_project: Any) -> None:
    project = make_project({
        "evals/weather/sunny.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                {END}
        """),
        "evals/other.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                {END}
        """),
    })
    inside = project.run("--list", cwd=project.folder / "evals" / "weather")
    assert inside.stdout == "weather/sunny\n1 case\n"
    at_root = project.run("--list", cwd=project.folder / "evals")
    assert at_root.stdout == "other\nweather/sunny\n2 cases\n"


def test_a_mistyped_flag_gets_the_closest_one(make_project: Any) -> None:
    project = make_project({})
    run = project.run("--trails", "3")
    assert run.code == 2
    assert run.stderr.strip().endswith("did you mean --trials? (see --help)")
    json_guess = project.run("--format", "json")
    assert json_guess.code == 2
    assert json_guess.stderr.strip().endswith(
        "JSON output is --json (--format belongs to `anpord eval import`) (see --help)")


def test_a_suite_whose_agent_program_is_missing_says_so_before_running(make_project: Any) -> None:
    project = make_project({"evals/imported.eval.py": eval_file("""
        from anpord import Variant

        suite = define_suite(
            cases=[define_eval(prompt="hi", validate=lambda c: True)],
            variants=[Variant(harness='command:no-such-agent-cli -p "$ANPORD_PROMPT"')],
            trials=3,
        )
    """)})
    run = project.run("--json")
    assert run.code == 1
    notes = [line for line in run.stderr.splitlines() if "note:" in line]
    assert len(notes) == 1, run.stderr
    assert "no-such-agent-cli is not installed here, so the 3 trial(s)" in notes[0]
    assert "--harness" in notes[0]
    assert json.loads(run.stdout)["totals"]["void"] == 3  # the trials stay void, as before


def test_a_subshell_or_a_command_list_is_looked_into_for_its_program(make_project: Any) -> None:
    # `(setsid …); …` starts with setsid, which is installed: no note. A missing program inside
    # a group is still named, by its own name.
    project = make_project({"evals/imported.eval.py": eval_file("""
        from anpord import Variant

        suite = define_suite(
            cases=[define_eval(prompt="hi", validate=lambda c: True)],
            variants=[
                Variant(name="sub", harness="command:(setsid true); echo done"),
                Variant(name="list", harness="command:true;echo done"),
                Variant(name="group", harness="command:{ no-such-agent-cli -p x; }"),
            ],
        )
    """)})
    run = project.run("--json")
    notes = [line for line in run.stderr.splitlines() if "note:" in line]
    assert len(notes) == 1, run.stderr
    assert "note: no-such-agent-cli is not installed here" in notes[0]
    assert "variant group will be void" in notes[0]


def test_a_missing_first_program_followed_by_another_command_is_no_void_note(make_project: Any) -> None:
    # The trial is void only when the command line exits 126/127 printing nothing: with another
    # command after `;`, `||`, `|`, `&` or a line break, a missing first program may not matter.
    project = make_project({"evals/imported.eval.py": eval_file("""
        from anpord import Variant

        suite = define_suite(
            cases=[define_eval(prompt="hi", validate=lambda c: True)],
            variants=[
                Variant(name="semi", harness="command:no-such-agent-cli -n true 2>/dev/null; echo ok"),
                Variant(name="or", harness="command:no-such-agent-cli || echo ok"),
                Variant(name="pipe", harness="command:no-such-agent-cli | cat; echo ok"),
                Variant(name="lines", harness="command:no-such-agent-cli 2>/dev/null\\necho ok"),
                Variant(name="and", harness="command:no-such-agent-cli && echo ok"),
            ],
        )
    """)})
    run = project.run("--json")
    notes = [line for line in run.stderr.splitlines() if "note:" in line]
    assert len(notes) == 1, run.stderr
    assert "variant and will be void" in notes[0]
    totals = json.loads(run.stdout)["totals"]
    assert totals["passed"] == 4 and totals["void"] == 1, totals
