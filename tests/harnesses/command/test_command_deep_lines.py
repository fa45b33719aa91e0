"""A command agent printing a JSON line nested 5,000 levels deep: the line is kept as log (the
protocol's rule for a line that is not an event), the trial is measured as usual, and the run
folder it leaves reads back."""

from __future__ import annotations

import subprocess
from typing import Any

from project_support import END, anpord_command, eval_file, run_env

AGENT = """
import json
print('{"type": "note", "deep": ' + "[" * 5000 + "]" * 5000 + "}")
print('{"type": "note", "nested": ' + "[" * 300 + "]" * 300 + "}")
print(json.dumps({"type": "message.completed", "text": "done"}))
"""

CONFIG = """
from anpord import define_eval_config
config = define_eval_config(harness="command:python3 {agent}", timeout=30)
"""


def test_a_deeply_nested_line_is_log_and_the_trial_passes(make_project: Any) -> None:
    project = make_project({
        "agents/deep.py": AGENT,
        "evals/deep.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                await t.send("go")
                t.check(t.reply, equals("done"))
                {END}
        """),
    })
    project.write({"evals/evals.config.py": CONFIG.format(agent=project.folder / "agents" / "deep.py")})
    run = project.run("--sandbox", "local")
    assert run.code == 0, run.output
    events = run.events("deep")
    logs = [e["message"] for e in events if e["type"] == "log"]
    assert any(m.startswith('{"type": "note", "deep": [[[[') for m in logs), logs
    assert any(m.startswith('{"type": "note", "nested": [[[[') for m in logs), logs
    assert not [e for e in events if e["type"] == "note"]
    shown = subprocess.run([*anpord_command(), "show", "latest", "deep"], cwd=project.folder,
                           env=run_env(), capture_output=True, text=True, timeout=60, check=False)
    assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown.stderr
