"""One ``tool.called``/``tool.result`` per MCP call, named ``<server>.<tool>``, when a coding
CLI's own stream reports the call the mcp mock records too: each CLI (a stand-in that starts the
mock's server from its CLI's own MCP configuration and calls it over stdio for real) reports it in
its own spelling."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from project_support import build_project, eval_file

from anpord.events import Event
from anpord.mocks._dedupe import McpDedupe, mcp_name

HERE = Path(__file__).resolve().parent

CASE = eval_file('''
    from anpord.mocks import mcp_mock, mcp_tool

    @define_eval(mocks=[mcp_mock("crm", tools=[mcp_tool("lookup", "Find a customer", result="gold customer")])])
    async def looked_up(t):
        await t.send("look ada up")
        t.check(t.reply, equals("found: gold customer"))
        calls = [e for e in t.events if e.type == "tool.called"]
        results = [e for e in t.events if e.type == "tool.result"]
        t.check([c.data["name"] for c in calls], equals(["crm.lookup"])).label("one call")
        t.check([(r.data["name"], r.data["status"]) for r in results],
                equals([("crm.lookup", "completed")])).label("one result")
        t.check(calls[0].data["input"], equals({"email": "ada@example.com"})).label("its input")
        t.check(len(t.mock("crm").calls), equals(1)).label("the mock saw it")
''')


@pytest.mark.parametrize("cli", ["claude", "codex", "gemini", "opencode"])
def test_each_cli_records_an_mcp_call_once(cli: str, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shutil.copyfile(HERE / "mcp_cli_standin.py", bin_dir / cli)
    (bin_dir / cli).chmod(0o755)
    config = ("from anpord import Variant, define_eval_config\n"
              f"config = define_eval_config(timeout=60, variants=[Variant(name='{cli}', harness='{cli}', "
              f"env={{'PATH': '{bin_dir}:/usr/bin:/bin'}}, options={{'check_credentials': False}})])\n")
    project = build_project(tmp_path / "p", {"evals/looked_up.eval.py": CASE}, config=config, agents=False)
    run = project.run("--json", timeout=120)
    result = run.result("looked_up")
    assert result["verdict"] == "passed", (result["reason"], run.output)


def _called(name: str, call_id: str, mock: bool = False, **data: Any) -> Event:
    extra = {"source": "mock"} if mock else {}
    return Event("tool.called", {"call_id": call_id, "name": name, "input": data, **extra})


def _result(name: str, call_id: str, mock: bool = False) -> Event:
    extra = {"source": "mock"} if mock else {}
    return Event("tool.result", {"call_id": call_id, "name": name, "output": "x", "status": "completed", **extra})


def test_whichever_side_arrives_first_is_kept_and_unmatched_calls_stay() -> None:
    d = McpDedupe({"crm": ["lookup"], "crm_eu": ["lookup"]})
    # The mock first, then the stream (OpenCode's spelling): the stream's pair is dropped.
    assert d.admit(_called("crm.lookup", "m1", mock=True, email="a")) is not None
    assert d.admit(_result("crm.lookup", "m1", mock=True)) is not None
    assert d.admit(_called("crm_lookup", "s1", email="a")) is None
    assert d.admit(_result("crm_lookup", "s1")) is None
    # The stream first (Gemini's spelling): kept and renamed; the mock's pair is dropped.
    kept = d.admit(_called("crm_eu__lookup", "s2", email="b"))
    assert kept is not None and kept.data["name"] == "crm_eu.lookup"
    assert d.admit(_called("crm_eu.lookup", "m2", mock=True, email="b")) is None
    assert d.admit(_result("crm_eu.lookup", "m2", mock=True)) is None
    renamed = d.admit(_result("crm_eu__lookup", "s2"))
    assert renamed is not None and renamed.data["name"] == "crm_eu.lookup"
    # Two calls of one tool matched by their input, whatever the order.
    d.admit(_called("crm.lookup", "m3", mock=True, email="c"))
    d.admit(_called("crm.lookup", "m4", mock=True, email="d"))
    assert d.admit(_called("mcp__crm__lookup", "s4", email="d")) is None
    assert d.admit(_called("mcp__crm__lookup", "s3", email="c")) is None
    # A call to another server, and any other tool, pass untouched.
    other = _called("Bash", "s5", command="ls")
    assert d.admit(other) is other


def test_a_bare_tool_name_is_a_mock_servers_only_where_the_cli_names_tools_bare() -> None:
    servers = {"crm": ["lookup", "list"], "erp": ["list"]}
    gemini = McpDedupe(servers, bare=True)
    kept = gemini.admit(_called("lookup", "g1"))
    assert kept is not None and kept.data["name"] == "crm.lookup"
    listed = gemini.admit(_called("list", "g2"))  # two servers have it: Gemini would prefix it
    assert listed is not None and listed.data["name"] == "list"
    other = McpDedupe(servers)
    kept = other.admit(_called("lookup", "c1"))
    assert kept is not None and kept.data["name"] == "lookup"


def test_unambiguous_spellings_name_the_server() -> None:
    assert mcp_name("mcp__crm__lookup") == "crm.lookup"
    assert mcp_name("lookup", "crm") == "crm.lookup"
    assert mcp_name("Bash") == "Bash"


def test_a_server_named_with_a_double_underscore_is_one_call_under_its_own_name() -> None:
    d = McpDedupe({"my__crm": ["lookup"], "db": ["run__query"]})
    # Claude Code's stream, named by the harness as it reads it (split at the first "__").
    stream = mcp_name("mcp__my__crm__lookup")
    kept = d.admit(_called(stream, "s1", email="a"))
    assert kept is not None and kept.data["name"] == "my__crm.lookup"
    assert d.admit(_called("my__crm.lookup", "m1", mock=True, email="a")) is None  # the same call
    renamed = d.admit(_result(stream, "s1"))
    assert renamed is not None and renamed.data["name"] == "my__crm.lookup"
    # A tool named with one: the first "__" is the server's end, as it should be.
    query = d.admit(_called(mcp_name("mcp__db__run__query"), "s2", sql="1"))
    assert query is not None and query.data["name"] == "db.run__query"
    assert d.admit(_called("db.run__query", "m2", mock=True, sql="1")) is None
    # A server that is no mock's keeps the name the harness gave it.
    other = d.admit(_called(mcp_name("mcp__gh__list"), "s3"))
    assert other is not None and other.data["name"] == "gh.list"
