"""The note for a suite whose agent program is not installed suggests a ``--harness`` that works
as written: following it (with ``$PWD`` expanded, as the shell does) runs the agent."""

from __future__ import annotations

import re
import shlex
from typing import Any

from project_support import eval_file


def test_the_suggested_command_harness_runs_as_written(make_project: Any) -> None:
    project = make_project({
        "agent.py": "import os\nprint('answer to ' + os.environ['ANPORD_PROMPT'])\n",
        "evals/imported.eval.py": eval_file("""
            from anpord import Variant

            async def answered(context):
                return (await context.answer() or "").startswith("answer to hi")

            suite = define_suite(
                cases=[define_eval(prompt="hi", validate=answered)],
                variants=[Variant(harness='command:no-such-agent-cli -p "$ANPORD_PROMPT"')],
            )
        """),
    })
    first = project.run()
    suggested = re.search(r'--harness ("command:[^"]*")', first.stderr)
    assert suggested is not None, first.stderr
    # What a user pastes into a shell from the project folder: $PWD becomes that folder.
    (spec,) = shlex.split(suggested.group(1).replace("$PWD", str(project.folder)))
    assert spec == f"command:python3 {project.folder}/agent.py"
    run = project.run("--harness", spec)
    assert run.code == 0, run.output
    assert list(run.verdicts().values()) == ["passed"]
