"""A command agent past its limit: its whole process tree is killed (a child in its own session
too), the trial fails naming the limit; the proxy's and the trace's ``model.called`` events count
through the same path as the harness's own ``usage``, one source per trial."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from project_support import eval_file

AGENT = r'''
import json, os, subprocess, sys, time
token = os.environ["LIMIT_TOKEN"]
# A child in a session of its own, named by the token so the test can look for it on the host.
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", token], start_new_session=True)
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


def _running(token: str) -> list[int]:
    """Processes on this host (sandboxed ones included) whose command line holds ``token``,
    zombies left out."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if token in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


@pytest.fixture
def agent_dir() -> Iterator[Path]:
    """The agent script's folder, readable by a sandbox's user (pytest's own are root-only)."""
    folder = Path(tempfile.mkdtemp(prefix="anpord-limit-agent-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _project(make_project, folder: Path, env: dict[str, str], limit: str,  # type: ignore[no-untyped-def]
             sandbox: str = "local"):
    token = f"limit-token-{uuid.uuid4().hex}"
    env = {"LIMIT_TOKEN": token, **env}
    script = folder / "agent.py"
    script.write_text(AGENT)
    script.chmod(0o644)
    config = f'''
from anpord import Variant, define_eval_config
config = define_eval_config(timeout=90, variants=[
    Variant(name="cmd", harness="command:python3 {script}", sandbox={sandbox!r}, mounts=[{str(folder)!r}],
            env={env!r}, {limit})])
'''
    project = make_project({"evals/limited/run.eval.py": CASE}, config=config)
    return project, token


@pytest.mark.parametrize("sandbox", ["local", "bwrap"])
def test_a_command_past_its_token_limit_is_killed_with_its_children(make_project, agent_dir: Path,
                                                                     sandbox: str) -> None:
    project, token = _project(make_project, agent_dir, {"REPORTS": "usage:4000;usage:7000", "LINGER": "1"},
                              "token_limit=10_000", sandbox)
    run = project.run("--json", env={})
    assert run.code == 1, run.output
    result = run.result("limited/run")
    assert (result["verdict"], result["reason"]) == ("failed", "token limit reached: 11,000 tokens of 10,000"), result
    # Not timed out (90 s): stopped at the limit, and nothing it started is left running.
    assert _running(token) == [], "the agent's process tree outlived its limit"


def test_model_called_events_count_when_the_harness_reports_no_usage(make_project, agent_dir: Path) -> None:
    # What the model proxy (or a trace) records arrives as model.called: counted the same way.
    project, _ = _project(make_project, agent_dir, {"REPORTS": "model.called:6000;model.called:6000",
                                                    "LINGER": "1"}, "token_limit=10_000")
    run = project.run("--json", env={})
    result = run.result("limited/run")
    assert (result["verdict"], result["reason"]) == ("failed", "token limit reached: 12,000 tokens of 10,000"), result


def test_one_source_per_trial_the_same_call_is_not_counted_twice(make_project, agent_dir: Path) -> None:
    # The harness's own report and the proxy's record of the same call: 8,000 tokens, not 16,000.
    project, _ = _project(make_project, agent_dir, {"REPORTS": "model.called:8000;usage:8000"},
                          "token_limit=10_000")
    run = project.run("--json", env={})
    result = run.result("limited/run")
    assert result["verdict"] == "passed", result
    assert result["usage"]["input_tokens"] == 8000, result
