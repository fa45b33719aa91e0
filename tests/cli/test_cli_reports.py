"""Artifacts (run.json, results.jsonl, per-trial JSON and events), redaction, --json, --junit,
exit codes and --fail-on/--strict."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from project_support import END, Project, Run, assert_passed, eval_file

SECRET_VALUE = "tok-plain-value-123"
KEY_PRINTED = "sk-abcdefghijklmnopqrstuvwxyz123456"
KEY_ANSWERED = "sk-proj-ABCDEFGHIJKLMNOPQRSTUV1234"

CONFIG = """
from anpord import Variant, define_eval_config
config = define_eval_config(
    harness="python:agents.kit:agent",
    timeout=10,
    variants=[Variant(name="main", secrets=["CORE_TEST_TOKEN"])],
)
"""

CASES = {
    "tools": f"""
        @define_eval(tags=["ok"])
        async def test(t):
            await t.send("combo Brooklyn")
            await t.send("approve /tmp/x")
            await t.respond_all("approve")
            t.log("a line from the test")
            t.succeeded()
            {END}
    """,
    "raises": """
        def helper():
            raise ValueError("the test body broke")

        @define_eval(tags=["bad"])
        async def test(t):
            await t.send("echo first")
            helper()
    """,
    "secrets": f"""
        @define_eval(tags=["ok"])
        async def test(t):
            await t.send("secret")
            t.log("the reply was " + t.reply)
            await t.send("env CORE_TEST_TOKEN")
            t.check(t.reply, includes("value="))
            {END}
    """,
    "printer": f"""
        print("EVAL-IMPORT-PRINT")

        @define_eval(tags=["ok"])
        async def test(t):
            print("TEST-BODY-PRINT")
            await t.send("print")
            {END}
    """,
    "failing": """
        @define_eval(tags=["bad"])
        async def test(t):
            await t.send("echo hi")
            t.check(t.reply, equals("something else")).label("wrong reply")
    """,
}


@pytest.fixture(scope="module")
def project(make_module_project: Any) -> Project:
    return make_module_project({f"evals/{n}.eval.py": eval_file(b) for n, b in CASES.items()}, config=CONFIG)


@pytest.fixture(scope="module")
def run(project: Project) -> Run:
    result = project.run("--json", "--max-concurrency", "3", env={"CORE_TEST_TOKEN": SECRET_VALUE})
    assert result.code == 1, result.output
    return result


def test_json_is_the_only_thing_on_stdout(run: Run) -> None:
    doc = json.loads(run.stdout)  # the whole of stdout parses
    assert doc["exit_code"] == 1
    assert doc["totals"]["trials"] == 5 and doc["totals"]["passed"] == 3 and doc["totals"]["failed"] == 2
    assert doc["closing_line"] == "3 passed, 2 failed"
    assert {c["case_id"] for c in doc["cells"]} == set(CASES)
    assert Path(doc["run_dir"]) == run.run_dir
    # The console went to stderr; agent and test prints went to the trial's log.
    assert "3 passed, 2 failed" in run.stderr
    for printed in ("AGENT-STDOUT-LINE", "AGENT-STDERR-LINE", "TEST-BODY-PRINT"):
        assert printed not in run.stdout and printed not in run.stderr
    assert "EVAL-IMPORT-PRINT" not in run.stdout and "EVAL-IMPORT-PRINT" in run.stderr
    logs = run.trial("printer")["logs"]
    assert "TEST-BODY-PRINT" in logs and "AGENT-STDOUT-LINE" in logs
    assert any("AGENT-STDERR-LINE" in line for line in logs)


def test_import_time_prints_never_reach_json_stdout(make_project: Any) -> None:
    project = make_project({
        "agents/noisy.py": """
            print("AGENT-MODULE-IMPORT")

            def agent(turn):
                print("NOISY-AGENT-PRINT")
                return "quiet answer"
        """,
        "evals/noisy.eval.py": eval_file(f"""
            print("EVAL-MODULE-IMPORT")

            @define_eval
            async def test(t):
                await t.send("hi")
                t.check(t.reply, equals("quiet answer"))
                {END}
        """),
    })
    listing = project.run("--list", "--json")
    assert [row["id"] for row in json.loads(listing.stdout)] == ["noisy"]
    run = project.run("--harness", "python:agents.noisy:agent", "--json")
    assert run.code == 0, run.output
    assert json.loads(run.stdout)["totals"]["passed"] == 1
    assert "EVAL-MODULE-IMPORT" in run.stderr and "AGENT-MODULE-IMPORT" in run.stderr
    assert run.trial("noisy")["logs"] == ["NOISY-AGENT-PRINT"]


def test_run_json(run: Run) -> None:
    info = run.run_json()
    assert run.run_dir is not None
    assert info["run_id"] == run.run_dir.name
    assert info["status"] == "finished" and info["exit_code"] == 1
    assert info["finished_at"] >= info["started_at"]
    assert info["versions"]["anpord"] and info["versions"]["python"]
    assert info["config"]["harness"] == "python:agents.kit:agent"
    assert info["config"]["max_concurrency"] == 3
    assert [v["label"] for v in info["variants"]] == ["main"]
    assert info["variants"][0]["secrets"] == ["CORE_TEST_TOKEN"]
    assert info["totals"]["passed"] == 3 and info["totals"]["failed"] == 2
    assert {c["case_id"] for c in info["cells"]} == set(CASES)
    assert all(c["trials"] == 1 and "pass_rate" in c["summary"] for c in info["cells"])
    assert info["format"] == 1 and info["owner"]["pid"] > 0
    assert all(len(c["case_hash"]) == 16 for c in info["cells"])


def test_results_jsonl_lines_point_at_their_events(run: Run) -> None:
    lines = run.results()
    assert len(lines) == 5
    assert {line["case_id"] for line in lines} == set(CASES)
    offsets = []
    for line in lines:
        for key in ("v", "variant", "trial", "verdict", "reason", "duration", "assertions", "usage",
                    "tags", "file", "events", "seed"):
            assert key in line, key
        record = run.trial(line["case_id"])
        assert record["verdict"] == line["verdict"]
        offsets.append((line["events"]["offset"], line["events"]["length"]))
    # Each trial's block is contiguous and blocks never overlap.
    offsets.sort()
    assert all(a + n <= b for (a, n), (b, _) in zip(offsets, offsets[1:]))
    tools = run.trial("tools")
    assert tools["logs"] == ["a line from the test"]
    assert tools["usage"] == {"input_tokens": 12, "output_tokens": 3, "cost": 0.002}
    assert tools["tags"] == ["ok"]


def test_events_ndjson(run: Run) -> None:
    events = run.events("tools")
    types = [e["type"] for e in events]
    for wanted in ("session.started", "turn.started", "message.completed", "tool.called", "tool.result",
                   "note", "usage", "input.requested", "input.resolved", "turn.completed",
                   "session.waiting", "session.completed"):
        assert wanted in types, (wanted, types)
    assert types[0] == "session.started" and types[-1] == "session.completed"
    called = [e for e in events if e["type"] == "tool.called"]
    assert [e["name"] for e in called] == ["lookup", "get_weather"]
    assert called[1]["input"] == {"city": "Brooklyn"}
    result = next(e for e in events if e["type"] == "tool.result" and e["name"] == "get_weather")
    assert result["status"] == "completed" and result["output"]["forecast"] == "Sunny"
    asked = next(e for e in events if e["type"] == "input.requested")
    assert asked["options"] == [{"id": "approve", "label": "Yes"}, {"id": "deny", "label": "No"}]
    assert asked["tool_name"] == "delete_file"
    roles = [e["role"] for e in events if e["type"] == "message.completed"]
    assert roles[:2] == ["user", "assistant"]
    assert all("ts" in e and e["session_id"] for e in events)


def test_ids_that_clean_to_the_same_name_keep_their_own_trial_files(make_project: Any) -> None:
    project = make_project({
        "evals/cities.eval.py": eval_file("""
            @define_eval(each=["東京", "大阪", "a:b", "a_b"], id=lambda row: row)
            async def test(t, row):
                raise ValueError(f"broke on {row}")
        """),
    })
    run = project.run()
    assert run.code == 1, run.output
    lines = run.results()
    assert len(lines) == 4
    files = {line["files"]["traceback"] for line in lines}
    assert len(files) == 4 and all(f.startswith("trials/") for f in files)
    broke = {run.trial(line["case_id"])["traceback"].splitlines()[-1] for line in lines}
    assert broke == {f"ValueError: broke on {row}" for row in ["東京", "大阪", "a:b", "a_b"]}  # none overwrote another


def test_a_raising_test_body_keeps_its_traceback_in_the_artifact(run: Run) -> None:
    line = run.result("raises")
    assert line["verdict"] == "failed"
    assert line["reason"] == "ValueError: the test body broke"
    record = run.trial("raises")
    assert "Traceback" in record["traceback"]
    assert "raises.eval.py" in record["traceback"] and "in helper" in record["traceback"]
    assert "Traceback" not in run.stdout + run.stderr


def test_secrets_are_redacted_in_every_artifact(run: Run) -> None:
    assert run.run_dir is not None
    text = "".join(p.read_text() for p in run.run_dir.rglob("*") if p.is_file())
    for secret in (SECRET_VALUE, KEY_PRINTED, KEY_ANSWERED):
        assert secret not in text, secret
    assert "[REDACTED]" in text
    assert any("[REDACTED]" in line for line in run.trial("secrets")["logs"])
    assert_passed(run, "secrets")  # the agent itself saw the real value


# -- JUnit and exit codes -----------------------------------------------------------------------

VARIETY = {
    "v_pass": f"""
        @define_eval(tags=["pass"])
        async def test(t):
            {END}
    """,
    "v_scored": """
        @define_eval(tags=["scored"])
        async def test(t):
            t.check("abc", similarity("abd")).at_least(0.9)
    """,
    "v_fail": """
        @define_eval(tags=["fail"])
        async def test(t):
            t.check("<a & b>", equals("c")).label("compares <markup> & ampersands")
    """,
    "v_timeout": """
        @define_eval(tags=["fail"], timeout=0.2)
        async def test(t):
            await asyncio.sleep(3)
    """,
    "v_skip": """
        @define_eval(tags=["skip"])
        async def test(t):
            t.skip("not now")
    """,
    "v_void": """
        from anpord import Variant

        suite = define_suite(
            cases=[define_eval(prompt="echo", validate=lambda context: True)],
            variants=[Variant(name="needs-secret", secrets=["ANPORD_CORE_TEST_UNSET_SECRET"])],
            source=files({}),
            tags=["void"],
        )
    """,
}


@pytest.fixture(scope="module")
def variety(make_module_project: Any) -> Project:
    return make_module_project({f"evals/{n}.eval.py": eval_file(b) for n, b in VARIETY.items()})


def parse_junit(path: Path) -> ET.Element:
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    return root


def test_junit(variety: Project) -> None:
    out = variety.folder / "reports" / "junit.xml"
    out.parent.mkdir()
    run = variety.run("--junit", str(out))
    assert run.code == 1, run.output
    root = parse_junit(out)
    cases = root.findall(".//testcase")
    assert len(cases) == 6 == len(run.results())
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == ("6", "2", "1", "1")
    suites = root.findall("testsuite")
    assert sum(int(s.get("tests", "0")) for s in suites) == 6

    def outcome(name: str) -> list[str]:
        case = next(c for c in cases if c.get("name", "").startswith(name + " "))
        return [child.tag for child in case if child.tag in ("failure", "error", "skipped")]

    assert outcome("v_pass") == []
    assert outcome("v_scored") == []  # scored is a failure only under strict
    assert outcome("v_fail") == ["failure"]
    assert outcome("v_timeout") == ["failure"]
    assert outcome("v_skip") == ["skipped"]
    assert outcome("v_void/0000") == ["error"]
    assert "<markup>" in ET.tostring(root, encoding="unicode").replace("&lt;", "<").replace("&gt;", ">")

    strict = variety.run("--junit", str(out), "--strict")
    assert strict.code == 1
    root = parse_junit(out)
    assert root.get("failures") == "3"


def test_junit_into_a_missing_folder_is_a_usage_error(variety: Project) -> None:
    run = variety.run("--junit", str(variety.folder / "no" / "such" / "junit.xml"))
    assert run.code == 2 and run.run_dir is None
    assert "\n" not in run.stderr.strip()


@pytest.mark.parametrize(
    "args, code",
    [
        (["--tag", "pass"], 0),
        (["--tag", "pass", "--tag", "skip"], 0),
        (["--tag", "pass", "--tag", "scored"], 0),
        (["--tag", "scored", "--strict"], 1),
        (["--tag", "scored", "--fail-on", "strict"], 1),
        (["--tag", "scored", "--fail-on", "failures"], 0),
        (["--tag", "fail"], 1),
        (["--tag", "fail", "--fail-on", "never"], 0),
        (["--tag", "void"], 1),
        (["--tag", "void", "--fail-on", "never"], 0),
        (["--tag", "pass", "--strict", "--fail-on", "never"], 2),
        (["--tag", "pass", "--fail-on", "regressed"], 0),  # passing cells did not regress
    ],
)
def test_exit_codes(variety: Project, args: list[str], code: int) -> None:
    run = variety.run(*args, "--json") if code != 2 else variety.run(*args)
    assert run.code == code, run.output
    if code != 2:
        doc = json.loads(run.stdout)
        assert doc["exit_code"] == code
        assert run.run_json()["exit_code"] == code
