"""Every scoped assertion passing and failing on ``t``, a session and a turn; value checks with
every matcher; handles (gate/soft/at_least/label); bare asserts."""

from __future__ import annotations

from typing import Any

import pytest
from project_support import END, Run, assert_passed, eval_file

MODELS = """
from pydantic import BaseModel

class Forecast(BaseModel):
    city: str
    forecast: str
    high: int

class Snowfall(BaseModel):
    city: str
    centimetres: float

SCHEMA = {"type": "object", "required": ["city", "high"], "properties": {"high": {"type": "integer"}}}
SNOW_SCHEMA = {"type": "object", "required": ["snow"]}
"""

# On what each scope sees, every assertion that should hold: (label, call on `x`).
PASSING = [
    ("succeeded", 'x.succeeded()'),
    ("message_includes str", 'x.message_includes("Sunny")'),
    ("message_includes regex", 'x.message_includes(re.compile(r"Brook\\w+"))'),
    ("called_tool", 'x.called_tool("get_weather")'),
    ("called_tool input", 'x.called_tool("get_weather", input={"city": "Brooklyn"})'),
    ("called_tool output", 'x.called_tool("get_weather", output={"forecast": "Sunny"})'),
    ("called_tool status", 'x.called_tool("get_weather", status="completed")'),
    ("called_tool count", 'x.called_tool("get_weather", count=1)'),
    ("called_tool count predicate", 'x.called_tool("lookup", count=lambda n: n >= 1)'),
    ("not_called_tool", 'x.not_called_tool("delete_file")'),
    ("tool_order", 'x.tool_order(["lookup", "get_weather"])'),
    ("tool_order steps", 'x.tool_order([{"name": "lookup", "input": {"city": "Brooklyn"}}, "get_weather"])'),
    ("max_tool_calls", 'x.max_tool_calls(2)'),
    ("no_failed_actions", 'x.no_failed_actions()'),
    ("event", 'x.event("note", data={"level": "info"})'),
    ("event count", 'x.event("tool.called", count=2)'),
    ("not_event", 'x.not_event("turn.failed")'),
    ("not_event data", 'x.not_event("note", data={"level": "error"})'),
    ("event_order", 'x.event_order(["turn.started", "tool.called", {"type": "note", "data": {"level": "info"}}, "turn.completed"])'),
    ("events_satisfy", 'x.events_satisfy("two tool calls", lambda evs: sum(e.type == "tool.called" for e in evs) == 2)'),
    ("output_equals", 'x.output_equals({"city": "Brooklyn", "forecast": "Sunny", "high": 21})'),
    ("output_matches model", 'x.output_matches(Forecast)'),
    ("output_matches schema", 'x.output_matches(SCHEMA)'),
]

# The same assertions made to miss. `b` is the scope holding a failed turn.
FAILING = [
    ("succeeded", 'b.succeeded()'),
    ("parked", 'x.parked()'),
    ("message_includes str", 'x.message_includes("Tokyo")'),
    ("message_includes regex", 'x.message_includes(re.compile(r"snow\\w*"))'),
    ("called_tool", 'x.called_tool("send_email")'),
    ("called_tool input", 'x.called_tool("get_weather", input={"city": "Paris"})'),
    ("called_tool output", 'x.called_tool("get_weather", output={"forecast": "Rain"})'),
    ("called_tool status", 'x.called_tool("get_weather", status="failed")'),
    ("called_tool count", 'x.called_tool("get_weather", count=2)'),
    ("called_tool count predicate", 'x.called_tool("lookup", count=lambda n: n > 3)'),
    ("not_called_tool", 'x.not_called_tool("lookup")'),
    ("tool_order", 'x.tool_order(["get_weather", "lookup"])'),
    ("tool_order steps", 'x.tool_order([{"name": "lookup", "input": {"city": "Paris"}}, "get_weather"])'),
    ("used_no_tools", 'x.used_no_tools()'),
    ("max_tool_calls", 'x.max_tool_calls(1)'),
    ("no_failed_actions", 'x.no_failed_actions()'),
    ("event", 'x.event("note", data={"level": "error"})'),
    ("event count", 'x.event("tool.called", count=2)'),
    ("not_event", 'x.not_event("tool.result")'),
    ("not_event data", 'x.not_event("note", data={"level": "info"})'),
    ("event_order", 'x.event_order([{"type": "note"}, {"type": "tool.called", "data": {"name": "lookup"}}])'),
    ("events_satisfy", 'x.events_satisfy("two tool calls", lambda evs: sum(e.type == "tool.called" for e in evs) == 2)'),
    ("output_equals", 'x.output_equals({"city": "Brooklyn"})'),
    ("output_matches model", 'x.output_matches(Snowfall)'),
    ("output_matches schema", 'x.output_matches(SNOW_SCHEMA)'),
]

SCOPES = ("t", "session", "turn")


def _lines(pairs: list[tuple[str, str]]) -> str:
    return "\n".join(f"    {call}.label({label!r})" for label, call in pairs)


def passing_case(scope: str) -> str:
    sender = "t.new_session()" if scope == "session" else "t"
    return eval_file(
        f"""
@define_eval
async def test(t):
    sender = {sender}
    turn = await sender.send("combo Brooklyn")
    x = {{"t": t, "session": sender, "turn": turn}}[{scope!r}]
{_lines(PASSING)}
    quiet_sender = {sender if scope != "t" else "t"}
    quiet = await quiet_sender.send("echo nothing to do")
    if {scope!r} == "turn":
        quiet.used_no_tools().label("used_no_tools")
        quiet.max_tool_calls(0).label("max_tool_calls 0")
    parked = await sender.send("approve /tmp/x")
    p = {{"t": t, "session": sender, "turn": parked}}[{scope!r}]
    p.parked().label("parked")
    {END}
""",
        MODELS,
    )


def failing_case(scope: str) -> str:
    sender = "t.new_session()" if scope == "session" else "t"
    return eval_file(
        f"""
@define_eval
async def test(t):
    sender = {sender}
    bad = await sender.send("raise")
    turn = await sender.send("combo Brooklyn broken")
    x = {{"t": t, "session": sender, "turn": turn}}[{scope!r}]
    b = {{"t": t, "session": sender, "turn": bad}}[{scope!r}]
{_lines(FAILING)}
    {END}
""",
        MODELS,
    )


QUIET_T = eval_file(f"""
@define_eval
async def test(t):
    await t.send("echo no tools here")
    t.used_no_tools().label("used_no_tools")
    t.max_tool_calls(0).label("max_tool_calls 0")
    s = t.new_session()
    await s.send("echo none here either")
    s.used_no_tools().label("session used_no_tools")
    {END}
""")

CHECKS = eval_file("""
@define_eval
async def test(t):
    await t.send("weather Brooklyn")
    reply = t.reply
    t.check(reply, includes("Sunny")).label("includes pass")
    t.check(reply, includes("sunny", ignore_case=True)).label("includes ignore_case pass")
    t.check(reply, includes(re.compile(r"in \\w+\\.$"))).label("includes regex pass")
    t.check(reply, includes("Rain")).label("includes fail")
    t.check(reply, equals("It is Sunny in Brooklyn.")).label("equals pass")
    t.check({"a": 1, "b": 2}, equals({"a": 1})).label("equals fail")
    t.check({"a": 1, "b": {"c": [1, 2]}}, matches({"b": {"c": [1, 2]}})).label("matches pass")
    t.check({"a": 1}, matches({"a": 2})).label("matches fail")
    t.check("order-1234", matches(re.compile(r"order-\\d+"))).label("matches regex pass")
    t.check(5, satisfies(lambda v: v > 3, "more than 3")).label("satisfies pass")
    t.check(2, satisfies(lambda v: v > 3, "more than 3")).label("satisfies fail")
    t.check(reply, "It is Sunny in Brooklyn.").label("plain value pass")
    t.check(reply, similarity("It is sunny in Brooklyn")).label("similarity soft")
    t.check(reply, similarity("Heavy snow in Oslo")).label("similarity soft no threshold")
    t.check(reply, similarity("It is Sunny in Brooklyn!")).gate(0.9).label("similarity gate pass")
    t.check(reply, similarity("Totally different")).gate(0.9).label("similarity gate fail")
    t.check(1, equals(2)).soft().label("soft miss without threshold")
    handle = await t.require(reply, includes("Brooklyn"))
    handle.label("require pass")
    (await t.require(reply, similarity("It is sunny in Brooklyn", threshold=0.8))).label("require similarity")
    await t.require(reply, includes("Paris"))
    t.log("AFTER-REQUIRE")
""")

HANDLES = {
    "scored": f"""
        @define_eval
        async def test(t):
            await t.send("echo hello")
            t.check(t.reply, similarity("echo: hello world")).at_least(0.99).label("close enough")
            t.check(t.reply, equals("nope")).soft(0.5).label("softened gate")
            t.message_includes("absent").soft().label("soft scoped")
            {END}
    """,
    "gate_threshold": f"""
        @define_eval
        async def test(t):
            await t.send("echo hello")
            t.check(t.reply, similarity("echo: echo hello!!")).gate(0.8).label("gate at 0.8")
            {END}
    """,
    "scoped_soft_pass": f"""
        @define_eval
        async def test(t):
            await t.send("echo hello")
            t.message_includes("nothing like it").at_least(0).label("at_least zero")
            {END}
    """,
    "bare_assert_pass": """
        @define_eval
        async def test(t):
            await t.send("echo hello")
            assert t.reply == "echo: echo hello"
            assert "hello" in t.reply, "it said hello"
    """,
    "bare_assert_fail": """
        @define_eval
        async def test(t):
            await t.send("echo hello")
            expected = "goodbye"
            assert t.reply == expected, "the agent said goodbye"
            t.log("AFTER-ASSERT")
    """,
    "bare_assert_truthy": """
        @define_eval
        async def test(t):
            await t.send("echo hello")
            assert t.reply.startswith("nope")
    """,
}


@pytest.fixture(scope="module")
def run(make_module_project: Any) -> Run:
    files = {}
    for scope in SCOPES:
        files[f"evals/scoped/pass_{scope}.eval.py"] = passing_case(scope)
        files[f"evals/scoped/fail_{scope}.eval.py"] = failing_case(scope)
    files["evals/scoped/quiet_t.eval.py"] = QUIET_T
    files["evals/checks.eval.py"] = CHECKS
    for name, body in HANDLES.items():
        files[f"evals/handles/{name}.eval.py"] = eval_file(body)
    project = make_module_project(files)
    result = project.run("--max-concurrency", "8")
    assert result.code == 1, result.output
    return result


@pytest.mark.parametrize("scope", SCOPES)
def test_every_assertion_passes(run: Run, scope: str) -> None:
    line = assert_passed(run, f"scoped/pass_{scope}")
    labels = {a["label"] for a in line["assertions"]}
    assert {label for label, _ in PASSING} | {"parked"} <= labels
    expected_scope = {"t": "run", "session": "session", "turn": "turn"}[scope]
    assert all(
        a["scope"].startswith(expected_scope) for a in line["assertions"] if a["label"] != "reached the end"
    )


def test_used_no_tools_passes_on_t_and_a_session(run: Run) -> None:
    line = assert_passed(run, "scoped/quiet_t")
    assert {"used_no_tools", "max_tool_calls 0", "session used_no_tools"} <= {a["label"] for a in line["assertions"]}


@pytest.mark.parametrize("scope", SCOPES)
def test_every_assertion_fails(run: Run, scope: str) -> None:
    case = f"scoped/fail_{scope}"
    line = run.result(case)
    assert line["verdict"] == "failed"
    by_label = run.assertions(case)
    assert by_label.pop("reached the end")["status"] == "passed"
    assert set(by_label) == {label for label, _ in FAILING}
    wrong = {label: a["status"] for label, a in by_label.items() if a["status"] != "failed"}
    assert not wrong, wrong
    assert all(a["kind"] == "gate" and a["message"] for a in by_label.values())


def test_failure_messages_say_what_was_seen(run: Run) -> None:
    a = run.assertions("scoped/fail_t")
    assert "get_weather" in a["called_tool"]["message"]  # the tools that were called
    assert "Paris" in a["called_tool input"]["message"] or "Brooklyn" in a["called_tool input"]["message"]
    assert "failed" in a["succeeded"]["message"]
    assert "completed" in a["parked"]["message"]
    assert "broken_tool" in a["no_failed_actions"]["message"]


def test_value_checks(run: Run) -> None:
    line = run.result("checks")
    assert line["verdict"] == "failed"
    a = run.assertions("checks")
    for label in ("includes pass", "includes ignore_case pass", "includes regex pass", "equals pass",
                  "matches pass", "matches regex pass", "satisfies pass", "plain value pass",
                  "similarity gate pass", "require pass", "require similarity"):
        assert a[label]["status"] == "passed", (label, a[label])
        assert a[label]["kind"] == "gate", label
    for label in ("includes fail", "equals fail", "matches fail", "satisfies fail", "similarity gate fail"):
        assert a[label]["status"] == "failed", (label, a[label])
    # similarity is soft by default and records a 0-1 score
    assert a["similarity soft"]["kind"] == "soft"
    assert 0.8 < a["similarity soft"]["score"] < 1
    assert a["similarity soft no threshold"]["kind"] == "soft"
    assert a["similarity soft no threshold"]["status"] == "passed"  # no threshold: only recorded
    assert a["similarity soft no threshold"]["score"] < 0.5
    assert a["soft miss without threshold"]["status"] == "passed"
    # the failed require is recorded and stops the test
    failed_require = [x for x in line["assertions"] if x["status"] == "failed" and "Paris" in x["name"]]
    assert len(failed_require) == 1
    assert "AFTER-REQUIRE" not in run.trial("checks")["logs"]
    assert line["reason"].startswith("includes fail")  # the first failed gate


def test_soft_checks_below_threshold_score(run: Run) -> None:
    line = run.result("handles/scored")
    assert line["verdict"] == "scored", line
    a = run.assertions("handles/scored")
    assert a["close enough"]["kind"] == "soft" and a["close enough"]["threshold"] == 0.99
    assert a["close enough"]["status"] == "failed"
    assert a["softened gate"]["kind"] == "soft" and a["softened gate"]["status"] == "failed"
    assert a["soft scoped"]["kind"] == "soft" and a["soft scoped"]["status"] == "passed"
    assert "close enough" in line["reason"]
    assert line["score"] is not None


def test_gate_threshold_and_at_least(run: Run) -> None:
    a = assert_passed(run, "handles/gate_threshold")["assertions"]
    gate = next(x for x in a if x["label"] == "gate at 0.8")
    assert gate["kind"] == "gate" and gate["threshold"] == 0.8 and 0.8 <= gate["score"] < 1
    b = assert_passed(run, "handles/scoped_soft_pass")["assertions"]
    soft = next(x for x in b if x["label"] == "at_least zero")
    assert soft["kind"] == "soft" and soft["score"] == 0


def test_bare_asserts(run: Run) -> None:
    ok = run.result("handles/bare_assert_pass")
    assert ok["verdict"] == "passed"  # passing asserts count as checks
    assert [a["status"] for a in ok["assertions"]] == ["passed", "passed"]
    assert ok["assertions"][0]["name"] == 'assert t.reply == "echo: echo hello"'

    bad = run.result("handles/bare_assert_fail")
    assert bad["verdict"] == "failed"
    assert "'echo: echo hello'" in bad["reason"] and "'goodbye'" in bad["reason"]
    assert "the agent said goodbye" in bad["reason"]
    record = bad["assertions"][0]
    assert record["actual"] == "echo: echo hello" and record["expected"] == "goodbye"
    assert "AFTER-ASSERT" not in run.trial("handles/bare_assert_fail")["logs"]
    # The console shows both values.
    assert "'goodbye'" in run.stdout and "'echo: echo hello'" in run.stdout

    truthy = run.result("handles/bare_assert_truthy")
    assert truthy["verdict"] == "failed"
    assert 't.reply.startswith("nope")' in truthy["reason"]
