"""An agent program that exits non-zero without answering: the console's failure details and the
record's reason carry its exit code and the end of its stderr, not only the check that failed
on the missing answer."""

from __future__ import annotations

from typing import Any

import pytest
from project_support import eval_file

AGENT = "import os\nprint('weather: ' + os.environ['ANPORD_PROMPT'])\n"


@pytest.mark.parametrize("sandbox", ["local", "bwrap"])
def test_an_agent_that_cannot_start_shows_why(make_project: Any, sandbox: str) -> None:
    # The agent sits outside the workspace: under bwrap its folder is not mounted, so python3
    # exits 2 with "can't open file" and prints no answer. Locally the path is mistyped.
    project = make_project({"agents/weather.py": AGENT})
    agent = project.path("agents/weather.py" if sandbox == "bwrap" else "agents/wether.py")
    project.write({"evals/weather.eval.py": eval_file(f"""
        from anpord import Variant

        async def answered(context):
            return "weather" in (await context.answer() or "")

        suite = define_suite(
            cases=[define_eval(id="paris", prompt="Paris", validate=answered)],
            variants=[Variant(name="py", harness="command:python3 {agent}", sandbox="{sandbox}")],
        )
    """)})
    run = project.run()
    assert run.code == 1, run.output
    result = run.result("weather/paris")
    assert result["verdict"] == "failed"
    assert "agent exited 2 with no answer; stderr: python3: can't open file" in result["reason"]
    assert str(agent) in result["reason"]
    assert result["error"]["kind"] == "agent"
    # The console shows it without --verbose.
    assert "error: agent exited 2 with no answer; stderr: python3: can't open file" in run.stdout


def test_an_agent_that_answers_and_exits_non_zero_is_not_blamed(make_project: Any) -> None:
    project = make_project({"evals/exit3.eval.py": eval_file("""
        from anpord import Variant

        suite = define_suite(
            cases=[define_eval(id="three", prompt="x", validate=lambda c: c.exists("none"))],
            variants=[Variant(name="sh", harness="command:echo yes; echo oops >&2; exit 3")],
        )
    """)})
    run = project.run()
    result = run.result("exit3/three")
    assert result["verdict"] == "failed"
    assert "exited" not in result["reason"] and result["error"] is None, result


NODE_LIKE = r'''
import sys
sys.stderr.write("""node:internal/modules/cjs/loader:1228
  throw err;
  ^

Error: Cannot find module '/home/me/proj/agents/agent.js'
    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)
    at Module._load (node:internal/modules/cjs/loader:1051:27)
    at node:internal/main/run_main_module:28:49 {
  code: 'MODULE_NOT_FOUND',
  requireStack: []
}

Node.js v20.20.2
""")
sys.exit(1)
'''


def test_the_cause_is_shown_when_a_stack_and_an_object_dump_follow_it(make_project: Any) -> None:
    # Node names the missing module first, then prints a stack, an object ending in "}" and its
    # version: the reason names the module, not "requireStack: [] | } | Node.js v20".
    project = make_project({"agents/node_like.py": NODE_LIKE})
    agent = project.path("agents/node_like.py")
    project.write({"evals/weather.eval.py": eval_file(f"""
        from anpord import Variant

        async def answered(context):
            return "weather" in (await context.answer() or "")

        suite = define_suite(
            cases=[define_eval(id="paris", prompt="Paris", validate=answered)],
            variants=[Variant(name="js", harness="command:python3 {agent}", sandbox="local")],
        )
    """)})
    run = project.run()
    assert run.code == 1, run.output
    reason = run.result("weather/paris")["reason"]
    assert "agent exited 1 with no answer; stderr: Error: Cannot find module '/home/me/proj/agents/agent.js'" in reason
    assert "Error: Cannot find module" in run.stdout
