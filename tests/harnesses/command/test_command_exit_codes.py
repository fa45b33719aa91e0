"""A command agent reporting a command's exit code in another spelling than a JSON integer
(a string from a shell script, a float, a number too large for an int): any code other than 0
is a failed action for ``no_failed_actions``."""

from __future__ import annotations

from typing import Any

import pytest
from project_support import END, eval_file

CONFIG = """
from anpord import define_eval_config
config = define_eval_config(harness="command:python3 {agent}", timeout=30)
"""


@pytest.mark.parametrize("code", ['"3"', "3.0", "99999999999999999999999999", '" 2 "', '"error"'])
def test_a_non_zero_exit_code_in_any_spelling_is_a_failed_action(make_project: Any, code: str) -> None:
    agent = (
        "print('{\"type\": \"command.completed\", \"command\": \"make\", \"exit_code\": " + code + ", \"output\": \"x\"}')\n"
        "print('{\"type\": \"message.completed\", \"text\": \"done\"}')\n"
    )
    project = make_project({
        "agents/codes.py": agent,
        "evals/codes.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                await t.send("go")
                t.no_failed_actions()
                {END}
        """),
    })
    project.write({"evals/evals.config.py": CONFIG.format(agent=project.folder / "agents" / "codes.py")})
    run = project.run("--sandbox", "local")
    assert run.code == 1, run.output
    assert "failed action" in run.result("codes")["reason"], run.result("codes")


@pytest.mark.parametrize("code", ["0", '"0"', "0.0", "null"])
def test_exit_code_zero_in_any_spelling_or_none_is_not_a_failed_action(make_project: Any, code: str) -> None:
    agent = (
        "print('{\"type\": \"command.completed\", \"command\": \"make\", \"exit_code\": " + code + ", \"output\": \"x\"}')\n"
        "print('{\"type\": \"message.completed\", \"text\": \"done\"}')\n"
    )
    project = make_project({
        "agents/codes.py": agent,
        "evals/codes.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                await t.send("go")
                t.no_failed_actions()
                {END}
        """),
    })
    project.write({"evals/evals.config.py": CONFIG.format(agent=project.folder / "agents" / "codes.py")})
    run = project.run("--sandbox", "local")
    assert run.code == 0, run.output
