"""``anpord audit`` end to end: real runs in subprocesses, a Python agent and a command agent as
the variants, saboteurs standing in for both behind the same sandbox and checks."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from project_support import Project, anpord_command, eval_file, run_env

# A command agent that does what the kit's Python agent does for these cases: the weather, the
# fix of calc.py, and an echo of anything else.
CMD_AGENT = '''
import os, pathlib
prompt = os.environ["ANPORD_PROMPT"]
if prompt.startswith("weather "):
    print(f"It is Sunny in {prompt.split()[1]}.")
elif "add()" in prompt:
    p = pathlib.Path("calc.py")
    p.write_text(p.read_text().replace("a - b", "a + b"))
    print("fixed calc.py")
else:
    print(f"echo: {prompt}")
'''

CONFIG = '''
from pathlib import Path
from anpord import define_eval_config, Variant
AGENT = Path(__file__).resolve().parents[1] / "agents" / "cmd_agent.py"
config = define_eval_config(timeout=20, variants=[
    Variant(name="py", harness="python:agents.kit:agent"),
    Variant(name="cmd", harness=f"command:python3 {AGENT}"),
])
'''

SOURCE = 'files({"calc.py": "def add(a, b):\\n    return a - b\\n"})'

CASES = {
    "evals/sound.eval.py": eval_file('''
        @define_eval
        async def test(t):
            await t.send("weather Paris")
            t.check(t.reply, includes("Sunny in Paris"))
    '''),
    "evals/succeeded.eval.py": eval_file('''
        @define_eval
        async def test(t):
            await t.send("weather Rome")
            t.succeeded()
    '''),
    "evals/banana.eval.py": eval_file('''
        @define_eval
        async def test(t):
            await t.send("say banana")
            t.check(t.reply, includes("banana"))
    '''),
    "evals/anylen.eval.py": eval_file('''
        @define_eval
        async def test(t):
            await t.send("weather Oslo")
            t.check(t.reply, satisfies(lambda s: len(s) >= 0))
    '''),
    # Only a damaged copy of the right answer gets through: weak, not hollow.
    "evals/weak.eval.py": eval_file('''
        @define_eval
        async def test(t):
            await t.send("alpha beta gamma delta epsilon")
            t.check(t.reply, includes("echo: alpha"))
    '''),
    "evals/approve.eval.py": eval_file('''
        @define_eval
        async def test(t):
            await t.send("approve /tmp/x")
            req = await t.require_input_request(tool_name="delete_file")
            await t.respond(req.respond("approve"))
            t.check(t.reply, includes("approve"))
    '''),
    "evals/fix.eval.py": eval_file(f'''
        test = define_eval(prompt="make add() return a + b", source={SOURCE},
                           validate=command("python3 -c 'import calc; assert calc.add(2, 2) == 4'"))
    ''', "from anpord.verifiers import command\n"),
    # Passes on the untouched source: hollow under `empty`.
    "evals/fixhollow.eval.py": eval_file(f'''
        test = define_eval(prompt="make add() return a + b", source={SOURCE},
                           validate=command("python3 -c 'import calc'"))
    ''', "from anpord.verifiers import command\n"),
}


def audit(project: Project, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*anpord_command(), "audit", *args], cwd=project.folder, env=run_env(),
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                          check=False)


def cli(project: Project, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*anpord_command(), *args], cwd=project.folder, env=run_env(),
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, check=False)


def table(doc: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(case id, variant name) → the case's audit entry."""
    return {(c["case_id"], c["variant"].split("/")[0]): c for c in doc["cases"]}


@pytest.fixture(scope="module")
def audited(make_module_project: Any) -> tuple[Project, subprocess.CompletedProcess[str], dict[str, Any]]:
    project = make_module_project({**CASES, "agents/cmd_agent.py": CMD_AGENT}, config=CONFIG)
    recorded = project.run("--json")
    assert recorded.run_dir is not None, recorded.output
    proc = audit(project, "--json")
    return project, proc, json.loads(proc.stdout)


def test_the_table_names_hollow_weak_and_sound_cases(audited: Any) -> None:
    _project, proc, doc = audited
    assert proc.returncode == 1, proc.stderr  # a hollow case fails the audit
    got = table(doc)
    status = {k: v["status"] for k, v in got.items()}
    for variant in ("py", "cmd"):
        assert status[("sound", variant)] == "sound"
        assert status[("fix", variant)] == "sound"
        for hollow in ("succeeded", "banana", "anylen", "fixhollow"):
            assert status[(hollow, variant)] == "hollow", (hollow, variant, got[(hollow, variant)])
    # A saboteur never asks: require_input_request catches every one of them.
    assert status[("approve", "py")] == "sound"
    assert status[("weak", "py")] == "weak"
    weak = got[("weak", "py")]["saboteurs"]
    assert [s for s, o in weak.items() if o["outcome"] == "passed"] == ["mutate"]


def test_each_hollow_case_names_the_saboteur_and_the_checks_that_let_it_through(audited: Any) -> None:
    _project, _proc, doc = audited
    got = table(doc)
    banana = got[("banana", "py")]["saboteurs"]
    through = {s: o["let_through_by"] for s, o in banana.items() if o["outcome"] == "passed"}
    assert list(through) == ["echo"]  # the prompt says "say banana"
    assert through["echo"] == ['includes("banana")']
    succeeded = got[("succeeded", "cmd")]["saboteurs"]
    assert succeeded["empty"]["outcome"] == "passed"
    assert succeeded["empty"]["let_through_by"] == ["succeeded()"]
    # `empty` changes nothing: the verifier passing on the untouched source lets it through.
    fixhollow = got[("fixhollow", "cmd")]["saboteurs"]
    assert fixhollow["empty"]["outcome"] == "passed"
    assert fixhollow["empty"]["let_through_by"] == ["python3 -c 'import calc'"]
    fix = got[("fix", "cmd")]["saboteurs"]
    assert fix["empty"]["outcome"] == "caught"
    assert fix["mutate"]["outcome"] == "caught"  # the agent's answer replayed; its fix is not


def test_the_catch_rate_counts_every_measured_case_and_saboteur(audited: Any) -> None:
    _project, _proc, doc = audited
    outcomes = [o["outcome"] for c in doc["cases"] for o in c["saboteurs"].values()]
    caught = outcomes.count("caught")
    through = outcomes.count("passed") + outcomes.count("scored")
    assert doc["caught"] == caught and doc["let_through"] == through
    assert doc["catch_rate"] == round(caught / (caught + through), 4)
    # 8 cases x 2 variants x 6 saboteurs, less mutate where no trial passed in the recording.
    not_run = outcomes.count("not run")
    assert caught + through + not_run == 8 * 2 * 6
    assert doc["hollow"] == 8 and doc["weak"] >= 1


def test_the_report_says_what_the_saboteurs_stood_in_for(audited: Any) -> None:
    project, _proc, doc = audited
    got = table(doc)
    assert got[("sound", "py")]["stood_in_for"] == "Python agent python:agents.kit:agent"
    assert got[("sound", "cmd")]["stood_in_for"].startswith("command agent command:python3 ")
    text = audit(project, "sound", "banana", "--saboteurs", "empty,echo")
    assert text.returncode == 1, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0] == "auditing 2 cases on 2 variants with empty, echo"
    header = next(line for line in lines if line.startswith("case"))
    assert header.split() == ["case", "empty", "echo", "status"]
    assert any(line.split()[:4] == ["banana", "[cmd]", "caught", "PASSED"] for line in lines), text.stdout
    assert "catch rate: 75% (6 of 8 caught)" in text.stdout
    assert "banana [py]: passed by echo; let through by: includes(\"banana\")" in text.stdout
    assert "stood in for command agent" in text.stdout and "behind the same sandbox" in text.stdout


def test_fail_on_never_exits_0(audited: Any) -> None:
    project, _proc, _doc = audited
    proc = audit(project, "banana", "--saboteurs", "echo", "--fail-on", "never", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["hollow"] == 2


def test_an_audit_is_a_run_of_kind_audit_never_a_baseline(audited: Any) -> None:
    project, _proc, doc = audited
    run = json.loads((project.folder / ".anpord" / "runs" / doc["run_id"] / "run.json").read_text())
    assert run["kind"] == "audit"
    runs = cli(project, "runs", "--json")
    assert runs.returncode == 0, runs.stderr
    kinds = {r["run_id"]: r["kind"] for r in json.loads(runs.stdout)}
    assert kinds[doc["run_id"]] == "audit"
    listing = cli(project, "runs").stdout
    assert any(line.startswith(doc["run_id"]) and line.rstrip().endswith("audit") for line in listing.splitlines())
    from anpord.store import open_store

    store = open_store(project.folder)
    try:  # never part of the flake history
        history = store.history_runs()
    finally:
        store.close()
    assert doc["run_id"] not in history and doc["recorded_run"] in history
    shown = cli(project, "show", doc["run_id"])
    assert "an audit: saboteurs stood in for the agent" in shown.stdout, shown.stderr
    refused = cli(project, "baseline", "set", doc["run_id"])
    assert refused.returncode != 0 and "suite audit" in refused.stderr
    # The audit's answers are never replayed: shuffle and mutate still use the eval's recording.
    again = json.loads(audit(project, "weak", "--saboteurs", "mutate", "--json").stdout)
    assert again["recorded_run"] != doc["run_id"] and again["recorded_run"] == doc["recorded_run"]


def test_mutate_is_deterministic_per_seed() -> None:
    from anpord.audit import damage

    text = "Yes, the answer is 42. It was checked twice."
    assert damage(text, 7) == damage(text, 7)
    hows = {damage(text, seed)[1] for seed in range(40)}
    assert hows == {"a sentence dropped", "a number changed", "a yes turned into a no", "cut in half"}
    for seed in range(40):
        assert damage(text, seed)[0] != text
    assert damage("No.", 1)[0] in ("Yes.", "N")


def test_without_a_recorded_run_shuffle_and_mutate_are_skipped_and_all_hollow_is_exit_1(make_project: Any) -> None:
    project = make_project({k: CASES[k] for k in ("evals/succeeded.eval.py", "evals/anylen.eval.py")})
    proc = audit(project)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout.count("note: shuffle and mutate skipped: no recorded run") == 1
    assert "2 hollow, 0 weak, 0 sound" in proc.stdout
    header = next(line for line in proc.stdout.splitlines() if line.startswith("case"))
    assert header.split() == ["case", "empty", "echo", "refuse", "noise", "status"]


BROKEN_HARNESS_CONFIG = '''
from anpord import define_eval_config
from anpord.harnesses import HarnessStartError, register_harness

class Broken:
    spec = "broken:x"
    needs_sandbox = True
    async def setup(self): pass
    async def teardown(self): pass
    async def prepare_sandbox(self, ctx):
        raise HarnessStartError("broken: cannot set up its sandbox")
    async def open_session(self, ctx, session_id):
        raise HarnessStartError("never opened")

register_harness("broken:", lambda spec, folder: Broken())
config = define_eval_config(harness="broken:x", timeout=10)
'''


def test_a_saboteur_that_cannot_stand_in_is_named(make_project: Any) -> None:
    project = make_project({"evals/sound.eval.py": CASES["evals/sound.eval.py"]}, config=BROKEN_HARNESS_CONFIG)
    proc = audit(project, "--saboteurs", "empty,echo", "--json")
    assert proc.returncode == 1, proc.stderr  # fail closed: nothing could be audited
    doc = json.loads(proc.stdout)
    assert doc["could_not_stand_in"] == 2 and doc["catch_rate"] is None
    (case,) = doc["cases"]
    assert case["status"] == "unaudited"
    assert case["saboteurs"]["empty"] == {"outcome": "void", "reason": "broken: cannot set up its sandbox"}
    assert audit(project, "--saboteurs", "empty,echo", "--fail-on", "never").returncode == 0
    text = audit(project, "--saboteurs", "empty")
    assert "sound: empty could not stand in: broken: cannot set up its sandbox" in text.stdout


def test_a_project_with_no_eval_file_says_what_to_write(make_project: Any) -> None:
    project = make_project({})
    proc = audit(project)
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("anpord audit: nothing to audit: no *.eval.py file under evals "
                                   "(write one, or run `anpord init`)")
    tagged = audit(make_project({"evals/sound.eval.py": CASES["evals/sound.eval.py"]}), "--tag", "nope")
    assert tagged.returncode == 2
    assert "no selected case matches --tag/--exclude-tag" in tagged.stderr


def test_bad_input_is_one_line(make_project: Any) -> None:
    project = make_project({"evals/sound.eval.py": CASES["evals/sound.eval.py"]})
    for args, words in ((["--saboteurs", "empty,bogus"], "unknown saboteur 'bogus'"),
                        (["--saboteurs", "emtpy"], "unknown saboteur 'emtpy' (did you mean 'empty'?)"),
                        (["nope"], "unknown eval id or path: nope"),
                        (["--fail-on", "sometimes"], "invalid choice")):
        proc = audit(project, *args)
        assert proc.returncode == 2
        assert words in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


AGENTLESS_CONFIG = '''
from anpord import define_eval_config, Variant
config = define_eval_config(timeout=20, variants=[
    Variant(name="cli", harness="claude", sandbox="bwrap"),
    Variant(name="web", harness="http://127.0.0.1:9"),
])
'''


def test_saboteurs_stand_in_for_a_coding_cli_under_bwrap_and_an_http_agent(make_project: Any) -> None:
    # Neither agent exists here: a saboteur never starts the agent it stands in for.
    project = make_project({k: CASES[k] for k in ("evals/fix.eval.py", "evals/fixhollow.eval.py")},
                           config=AGENTLESS_CONFIG, agents=False)
    proc = audit(project, "--saboteurs", "empty,echo", "--json")
    assert proc.returncode == 1, proc.stderr
    got = table(json.loads(proc.stdout))
    assert got[("fix", "cli")]["stood_in_for"] == "coding CLI claude"
    assert got[("fix", "web")]["stood_in_for"] == "HTTP agent http://127.0.0.1:9"
    for variant in ("cli", "web"):
        assert got[("fix", variant)]["status"] == "sound"
        hollow = got[("fixhollow", variant)]
        assert hollow["status"] == "hollow"
        assert hollow["saboteurs"]["empty"]["let_through_by"] == ["python3 -c 'import calc'"]


def test_the_view_shows_an_audit_as_one(audited: Any) -> None:
    import re
    import urllib.request

    project, _proc, doc = audited
    view = subprocess.Popen([*anpord_command(), "view", "--port", "0"], cwd=project.folder, env=run_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        assert view.stdout is not None
        url = re.search(r"(http://[\w.\[\]:]+)/", view.stdout.readline())
        assert url is not None
        runs = urllib.request.urlopen(url.group(1) + "/", timeout=20).read().decode()
        row = runs[runs.index(f'data-run="{doc["run_id"]}"'):]
        assert '<span class="run-kind">audit</span>' in row[: row.index("</tr>")]
        page = urllib.request.urlopen(f"{url.group(1)}/runs/{doc['run_id']}", timeout=20).read().decode()
        assert "An audit of the suite" in page
    finally:
        view.terminate()
        view.communicate(timeout=15)


def test_judges_grade_the_saboteurs_answers(make_project: Any) -> None:
    from judge_support import grade, judge_config, judge_requests

    from anpord.testing.model_server import ModelServer, rule

    # A judge that calls every answer clear: the case is hollow, and the judge is what let it through.
    server = ModelServer([rule("audit-lenient", grade("good", "clear enough"))]).start()
    try:
        project = make_project({"evals/clear.eval.py": eval_file('''
            case = define_eval(prompt="Explain DNS",
                               judges=[judge("clarity", "audit-lenient: is it clear?", choices={"good": 1, "poor": 0})])
        ''', "from anpord import judge\n")}, config=judge_config(server.url))
        proc = audit(project, "--saboteurs", "refuse,noise", "--json")
        assert proc.returncode == 1, proc.stderr
        (case,) = json.loads(proc.stdout)["cases"]
        assert case["status"] == "hollow"
        assert case["saboteurs"]["refuse"] == {"outcome": "passed", "let_through_by": ["clarity"]}
        graded = " ".join(str(r["messages"]) for r in judge_requests(server, "audit-lenient"))
        # The judge read each saboteur's answer: the refusal, and the off-topic prose.
        assert "I can't help with that." in graded
        assert any(word in graded for word in ("lighthouse", "Sourdough", "swifts")), graded
    finally:
        server.stop()


def test_shuffle_and_mutate_replay_the_recording(audited: Any) -> None:
    from anpord.results import read_run

    project, _proc, doc = audited
    recorded = read_run(project.folder / ".anpord" / "runs" / doc["recorded_run"])
    audit_run = read_run(project.folder / ".anpord" / "runs" / doc["run_id"])

    def answers(reading: Any, case_id: str, variant: str) -> list[str]:
        trial = next(t for t in reading.trials if t.case_id == case_id and t.variant == variant)
        return [e.data["text"] for e in reading.events(trial)
                if e.type == "message.completed" and e.data.get("role") == "assistant"]

    py = next(t.variant for t in recorded.trials if t.variant.startswith("py"))
    right = answers(recorded, "weak", py)
    assert right == ["echo: alpha beta gamma delta epsilon"]
    (damaged,) = answers(audit_run, "weak", f"mutate:{py}")
    assert damaged == right[0][: len(right[0]) // 2]  # one sentence, no number, no yes: cut in half
    others = {a for t in recorded.trials if t.case_id != "sound" for a in answers(recorded, t.case_id, t.variant)}
    (shuffled,) = answers(audit_run, "sound", f"shuffle:{py}")
    assert shuffled in others
