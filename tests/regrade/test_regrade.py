"""``anpord regrade`` end to end: a real run (a Python agent, and a command agent under bwrap
editing a fixture), then the eval files changed and the run decided again in a subprocess —
without the agents, whose program is deleted before the regrade."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from project_support import Project, anpord_command, eval_file, run_env

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

CMD_AGENT = '''
import os, pathlib
prompt = os.environ["ANPORD_PROMPT"]
if "add()" in prompt:
    p = pathlib.Path("calc.py")
    p.write_text(p.read_text().replace("a - b", "a + b"))
    pathlib.Path("notes.txt").write_text("fixed it\\n")
    pathlib.Path("old.txt").unlink()
    print("fixed calc.py")
else:
    print(f"echo: {prompt}")
'''

CONFIG = '''
from pathlib import Path
from anpord import define_eval_config, Variant
AGENT = Path(__file__).resolve().parents[1] / "agents" / "cmd_agent.py"
config = define_eval_config(timeout=30, variants=[
    Variant(name="py", harness="python:agents.kit:agent"),
    Variant(name="cmd", harness=f"command:python3 {AGENT}", sandbox="bwrap", mounts=[str(AGENT.parent)]),
])
'''

SOURCE = 'files({"calc.py": "def add(a, b):\\n    return a - b\\n", "old.txt": "x", "keep/a.txt": "a"})'
VERIFIER = "from anpord.verifiers import command\n"


def fix_case(check: str) -> str:
    return eval_file(f'''
        test = define_eval(prompt="make add() return a + b", source={SOURCE},
                           validate=command("python3 -c 'import calc; assert {check}'"))
    ''', VERIFIER)


CASES = {
    "evals/weather.eval.py": eval_file('''
        @define_eval
        async def test(t):
            await t.send("weather Paris")
            t.check(t.reply, includes("Sunny"))
    '''),
    "evals/fix.eval.py": fix_case("calc.add(2, 2) == 4"),
    "evals/changed.eval.py": eval_file(f'''
        async def validate(context):
            return context.files_changed() == ["notes.txt", "old.txt", "calc.py"][:0] + sorted(["calc.py", "notes.txt", "old.txt"])
        test = define_eval(prompt="make add() return a + b", source={SOURCE}, validate=validate)
    '''),
    "evals/approve.eval.py": eval_file('''
        @define_eval
        async def test(t):
            await t.send("approve /tmp/x")
            req = await t.require_input_request(tool_name="delete_file")
            await t.respond(req.respond("approve"))
            t.check(t.reply, includes("you chose approve"))
    '''),
    "evals/structured.eval.py": eval_file('''
        @define_eval
        async def test(t):
            await t.send("json")
            t.output_equals({"city": "Brooklyn", "temp": 21, "tags": ["sunny", "warm"]})
    '''),
    "evals/sends.eval.py": eval_file('''
        @define_eval
        async def test(t):
            await t.send("weather Paris")
            t.called_tool("get_weather", input={"city": "Paris"})
    '''),
}


def cli(project: Project, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*anpord_command(), *args], cwd=project.folder, env=run_env(),
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                          check=False)


def verdicts(doc: dict[str, Any]) -> dict[tuple[str, str], tuple[str, str | None]]:
    return {(c["case_id"], c["variant"].split("/")[0]): (c["results"][0]["verdict"], c["results"][0]["reason"])
            for c in doc["cells"]}


@pytest.fixture(scope="module")
def recorded(make_module_project: Any) -> tuple[Project, str]:
    project = make_module_project({**CASES, "agents/cmd_agent.py": CMD_AGENT}, config=CONFIG)
    run = project.run("--json")
    assert run.run_dir is not None, run.output
    doc = run.json()
    got = verdicts(doc)
    assert got[("fix", "cmd")][0] == "passed", got
    assert got[("changed", "cmd")][0] == "passed", got
    assert got[("approve", "py")][0] == "passed", got
    assert got[("structured", "py")][0] == "passed", got
    return project, doc["run_id"]


def regrade(project: Project, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    proc = cli(project, "regrade", *args, "--json")
    try:
        return proc, json.loads(proc.stdout)
    except ValueError:
        raise AssertionError(f"no JSON on stdout: {proc.stdout!r}\n{proc.stderr}") from None


def test_snapshots_are_kept_owner_only_inside_the_run_folder(recorded: Any) -> None:
    project, run_id = recorded
    folder = project.folder / ".anpord" / "runs" / run_id / "workspaces"
    assert sorted(p.name for p in folder.iterdir()) == ["blobs.pack", "index.jsonl"]
    assert folder.stat().st_mode & 0o777 == 0o700
    assert all(p.stat().st_mode & 0o777 == 0o600 for p in folder.iterdir())
    from anpord.workspace import read_archive, trial_key

    archive = read_archive(folder)
    key = trial_key("fix", "cmd", 0)
    tree = archive.tree(key)
    assert "old.txt" not in tree and tree["notes.txt"][0] == "f" and "keep/a.txt" in tree
    # Two trials (fix and changed on cmd) started from the same fixture: one base.
    cmd_bases = {archive.trials[trial_key(c, "cmd", 0)]["base"] for c in ("fix", "changed")}
    assert len(cmd_bases) == 1


def test_a_regrade_decides_again_with_todays_checks_without_the_agent(recorded: Any, tmp_path: Path) -> None:
    project, run_id = recorded
    # Today's checks: the weather now wants rain, the verifier a different sum. The agents are gone.
    project.write({
        "evals/weather.eval.py": CASES["evals/weather.eval.py"].replace('"Sunny"', '"Rainy"'),
        "evals/fix.eval.py": fix_case("calc.add(2, 3) == 6"),
    })
    saved = project.path("agents/cmd_agent.py").read_text()
    project.path("agents/cmd_agent.py").unlink()
    try:
        proc, doc = regrade(project, run_id)
    finally:
        project.write({"evals/weather.eval.py": CASES["evals/weather.eval.py"],
                       "evals/fix.eval.py": CASES["evals/fix.eval.py"], "agents/cmd_agent.py": saved})
    assert proc.returncode == 1, proc.stderr
    got = verdicts(doc)
    assert got[("weather", "py")][0] == "failed", got
    assert got[("fix", "cmd")][0] == "failed", got[("fix", "cmd")]
    # Checks that did not change decide as before: the workspace, input requests, structured output.
    assert got[("changed", "cmd")][0] == "passed", got[("changed", "cmd")]
    assert got[("approve", "py")][0] == "passed", got[("approve", "py")]
    assert got[("structured", "py")][0] == "passed", got[("structured", "py")]
    assert got[("sends", "py")][0] == "passed", got[("sends", "py")]
    assert doc["kind"] == "regrade" and doc["regrade_of"] == run_id
    run = json.loads((project.folder / ".anpord" / "runs" / doc["run_id"] / "run.json").read_text())
    assert run["kind"] == "regrade" and run["regrade_of"] == run_id
    # The same sum passes against the workspace the agent left (calc.py fixed).
    proc, doc = regrade(project, run_id, "fix", "--variant", "cmd")
    assert proc.returncode == 0, proc.stderr
    assert [v for v, _r in verdicts(doc).values()] == ["passed"]


def test_a_test_that_now_sends_something_else_is_void_naming_the_turn_and_both_inputs(recorded: Any) -> None:
    project, run_id = recorded
    project.write({"evals/sends.eval.py": CASES["evals/sends.eval.py"].replace("weather Paris", "weather Rome")})
    try:
        proc, doc = regrade(project, run_id, "sends")
    finally:
        project.write({"evals/sends.eval.py": CASES["evals/sends.eval.py"]})
    assert proc.returncode == 1
    verdict, reason = verdicts(doc)[("sends", "py")]
    assert verdict == "void"
    assert "turn 1" in reason and "'weather Paris'" in reason and "'weather Rome'" in reason, reason


def test_a_case_added_after_the_run_is_listed_as_not_regradable(recorded: Any) -> None:
    project, run_id = recorded
    project.write({"evals/newer.eval.py": CASES["evals/weather.eval.py"]})
    try:
        proc, doc = regrade(project, run_id, "weather", "newer", "--variant", "py")
    finally:
        project.path("evals/newer.eval.py").unlink()
    assert proc.returncode == 0, proc.stderr
    listed = {(n["case_id"], n["variant"]) for n in doc["not_regradable"]}
    assert listed == {("newer", "py")}
    assert "added after it" in doc["not_regradable"][0]["reason"]
    assert "not regradable: newer on py" in proc.stderr


def test_a_torn_snapshot_makes_that_trial_void(recorded: Any, tmp_path: Path) -> None:
    project, run_id = recorded
    pack = project.folder / ".anpord" / "runs" / run_id / "workspaces" / "blobs.pack"
    saved = pack.read_bytes()
    pack.write_bytes(saved[: len(saved) // 3])
    try:
        proc, doc = regrade(project, run_id, "fix")
    finally:
        pack.write_bytes(saved)
    verdict, reason = verdicts(doc)[("fix", "cmd")]
    assert verdict == "void" and "torn" in reason, reason


def test_a_run_without_snapshots_regrades_what_it_can(make_project: Any) -> None:
    project = make_project({k: v for k, v in CASES.items() if k in ("evals/weather.eval.py", "evals/fix.eval.py")}
                           | {"agents/cmd_agent.py": CMD_AGENT}, config=CONFIG)
    run = project.run("--json", "--no-snapshots")
    assert run.run_dir is not None and not (run.run_dir / "workspaces").exists(), run.output
    proc, doc = regrade(project, run.json()["run_id"])
    got = verdicts(doc)
    assert got[("weather", "py")][0] == "passed"
    verdict, reason = got[("fix", "cmd")]
    assert verdict == "void" and "--no-snapshots" in reason and "workspace" in reason, reason
    assert proc.returncode == 1


def test_runs_and_show_name_the_regraded_run(recorded: Any) -> None:
    project, run_id = recorded
    proc, doc = regrade(project, run_id, "weather", "--variant", "py")
    assert proc.returncode == 0, proc.stderr
    new = doc["run_id"]
    listing = cli(project, "runs")
    assert any(line.startswith(new) and f"regrade of {run_id}" in line
               for line in listing.stdout.splitlines()), (listing.stdout, listing.stderr)
    shown = cli(project, "show", new).stdout
    assert f"regrade of {run_id}" in shown
    compared = cli(project, "compare", run_id, new, "--format", "json")
    assert compared.returncode in (0, 1), compared.stderr
    # Never a baseline.
    refused = cli(project, "baseline", "set", new)
    assert refused.returncode == 2, refused.stdout
    # The view's run page names the run it regraded; its list tags it.
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "view"))
    from view_support import view_server

    with view_server(project.folder) as view:
        status, _headers, page = view.get(f"/runs/{new}")
        assert status == 200 and f'Regrade of <a href="/runs/{run_id}">{run_id}</a>' in page
        _status, _headers, listing_page = view.get("/")
        assert '<span class="run-kind">regrade</span>' in listing_page


def test_bad_input_is_one_line(recorded: Any) -> None:
    project, run_id = recorded
    proc = cli(project, "regrade", "nosuchrun")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    _proc, doc = regrade(project, run_id, "weather", "--variant", "py")
    again = cli(project, "regrade", doc["run_id"])
    assert again.returncode == 2 and f"regrade {run_id} instead" in again.stderr, again.stderr
