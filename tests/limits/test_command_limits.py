"""A command agent past its limit: its whole process tree is killed (a child in its own session
too), the trial fails naming the limit; the proxy's and the trace's ``model.called`` events count
through the same path as the harness's own ``usage``, one source per trial."""

from __future__ import annotations

import os
import time
from pathlib import Path

from project_support import eval_file

AGENT = r'''
import json, os, subprocess, sys, time
marks = os.environ["LIMIT_MARKS"]
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
with open(os.path.join(marks, "pids"), "w") as f:
    f.write(f"{os.getpid()} {child.pid}")
for line in os.environ.get("REPORTS", "").split(";"):
    if line:
        kind, tokens = line.split(":")
        event = {"type": kind, "input_tokens": int(tokens), "output_tokens": 0, "model": "gpt-4o"}
        if kind == "model.called":
            event["provider"] = "openai"
        print(json.dumps(event), flush=True)
if os.environ.get("LINGER"):
    time.sleep(120)
print("done")
'''

CASE = eval_file('''
    @define_eval(timeout=90)
    async def run(t):
        turn = await t.send("go")
        t.check(turn.message, "done")
''')


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie waiting for its reaper is gone for our purpose.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _project(make_project, tmp_path: Path, env: dict[str, str], limit: str):  # type: ignore[no-untyped-def]
    marks = tmp_path / "marks"
    marks.mkdir()
    env = {"LIMIT_MARKS": str(marks), **env}
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    config = f'''
from anpord import Variant, define_eval_config
config = define_eval_config(timeout=90, variants=[
    Variant(name="cmd", harness="command:python3 {script}", env={env!r}, {limit})])
'''
    project = make_project({"evals/limited/run.eval.py": CASE}, config=config)
    return project, marks


def test_a_command_past_its_token_limit_is_killed_with_its_children(make_project, tmp_path: Path) -> None:
    project, marks = _project(make_project, tmp_path, {"REPORTS": "usage:4000;usage:7000", "LINGER": "1"},
                              "token_limit=10_000")
    run = project.run("--json", env={})
    assert run.code == 1, run.output
    result = run.result("limited/run")
    assert (result["verdict"], result["reason"]) == ("failed", "token limit reached: 11,000 tokens of 10,000"), result
    agent, child = (int(x) for x in (marks / "pids").read_text().split())
    deadline = time.monotonic() + 10  # the kill is sent; the kernel reaps on its own time
    while (_alive(agent) or _alive(child)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(agent) and not _alive(child), "the agent's process tree outlived its limit"


def test_model_called_events_count_when_the_harness_reports_no_usage(make_project, tmp_path: Path) -> None:
    # What the model proxy (or a trace) records arrives as model.called: counted the same way.
    project, _ = _project(make_project, tmp_path, {"REPORTS": "model.called:6000;model.called:6000",
                                                    "LINGER": "1"}, "token_limit=10_000")
    run = project.run("--json", env={})
    result = run.result("limited/run")
    assert (result["verdict"], result["reason"]) == ("failed", "token limit reached: 12,000 tokens of 10,000"), result


def test_one_source_per_trial_the_same_call_is_not_counted_twice(make_project, tmp_path: Path) -> None:
    # The harness's own report and the proxy's record of the same call: 8,000 tokens, not 16,000.
    project, _ = _project(make_project, tmp_path, {"REPORTS": "model.called:8000;usage:8000"},
                          "token_limit=10_000")
    run = project.run("--json", env={})
    result = run.result("limited/run")
    assert result["verdict"] == "passed", result
    assert result["usage"]["input_tokens"] == 8000, result
