"""Mistakes in ``user=``, ``max_turns=``, ``script(...)`` and ``persona(...)`` are one-line errors
naming the file when it loads (exit 2), before anything runs."""

from __future__ import annotations

from typing import Any

import pytest
from project_support import eval_file

from anpord import define_eval, persona, script
from anpord.authoring import DefinitionError
from anpord.users import DEFAULT_MAX_TURNS


@pytest.mark.parametrize(
    ("definition", "message"),
    [
        ("define_eval(prompt='hi', user='bob')", "user= must be script([...]) or persona(goal=..., brief=...), got str"),
        ("define_eval(prompt='hi', user=['a', 'b'])", "user= must be script([...]) or persona(goal=..., brief=...), got list"),
        ("define_eval(prompt='hi', user=script(['a']), max_turns=0)", "max_turns must be a positive integer, got 0"),
        ("define_eval(prompt='hi', user=script(['a']), max_turns=True)", "max_turns must be a positive integer, got True"),
        ("define_eval(prompt='hi', user=script(['a']), max_turns=2.5)", "max_turns must be a positive integer, got 2.5"),
        ("define_eval(prompt='hi', max_turns=3)", "max_turns= limits a conversation with a simulated user: give user= too"),
        ("define_eval(prompt='hi', user=script('hello'))", "script() takes a list of replies, got str"),
        ("define_eval(prompt='hi', user=script([]))", "script() needs at least one reply"),
        ("define_eval(prompt='hi', user=script(['ok', '']))", "script() reply 1 must be a non-empty string, got ''"),
        ("define_eval(prompt='hi', user=persona(goal='', brief='x'))", "persona goal= must be a non-empty string, got ''"),
        ("define_eval(prompt='hi', user=persona(goal='g', brief=None))", "persona brief= must be a non-empty string, got None"),
        ("define_eval(prompt='hi', user=persona(goal='g', brief='b', model=7))",
         "persona model= must be a model id string or JudgeConfig(...), got 7"),
    ],
)
def test_a_bad_user_definition_is_one_line_naming_the_file(
    make_project: Any, definition: str, message: str
) -> None:
    project = make_project({"evals/bad.eval.py": eval_file(f"case = {definition}\n", "from anpord import persona, script\n")})
    run = project.run()
    assert (run.code, run.stdout) == (2, ""), run.output
    assert run.stderr == f"anpord eval: evals/bad.eval.py: {message}\n"


def test_user_and_max_turns_belong_to_declarative_cases() -> None:
    async def body(t: Any) -> None: ...

    for extra in ({"user": script(["a"])}, {"max_turns": 2}):
        with pytest.raises(DefinitionError, match=r"belongs to declarative cases \(prompt=\), not to test functions$"):
            define_eval(body, **extra)


def test_a_user_without_max_turns_talks_as_long_as_it_has_something_to_say() -> None:
    assert script(["a", "b", "c"]).default_max_turns == 4  # the prompt and three replies
    assert persona(goal="g", brief="b").default_max_turns == DEFAULT_MAX_TURNS
