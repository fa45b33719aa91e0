"""Every scoped assertion, passing and failing, on hand-built event lists."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import pytest

from anpord.assertions import AssertionHandle, Recorder, ScopedAssertions
from anpord.events import Event
from anpord.expect import includes


class Scope(ScopedAssertions):
    """The smallest scope: fixed events, statuses and output, its own recorder."""

    def __init__(
        self,
        events: Sequence[Event] = (),
        statuses: Sequence[str] = ("completed",),
        output: Any = None,
    ) -> None:
        self.events = list(events)
        self.statuses = list(statuses)
        self.output = output
        self.recorder = Recorder()

    def _assert_events(self) -> Sequence[Event]:
        return self.events

    def _assert_statuses(self) -> Sequence[str]:
        return self.statuses

    def _assert_output(self) -> Any:
        return self.output

    def _assert_recorder(self) -> Recorder:
        return self.recorder

    def _assert_scope(self) -> str:
        return "turn 1"


def ev(type_: str, **data: Any) -> Event:
    return Event(type_, data)


def weather_run() -> list[Event]:
    return [
        ev("session.started", session_id="s1"),
        ev("turn.started", session_id="s1"),
        ev("message.completed", role="user", text="Weather in Brooklyn?"),
        ev(
            "tool.called",
            call_id="c1",
            name="get_weather",
            input={"city": "Brooklyn", "units": "F"},
        ),
        ev(
            "tool.result",
            call_id="c1",
            name="get_weather",
            output={"sky": "sunny", "high": 71},
            status="completed",
        ),
        ev("tool.called", call_id="c2", name="send_email", input={"to": "a@b.c"}),
        ev(
            "tool.result",
            call_id="c2",
            name="send_email",
            output=None,
            status="failed",
            error="SMTP down",
        ),
        ev("message.completed", role="assistant", text="It is Sunny in Brooklyn, 71F."),
        ev("turn.completed", session_id="s1"),
    ]


def one(scope: Scope) -> None:
    assert len(scope.recorder) == 1


# -- every method records exactly one gate --------------------------------------------------


def test_records_one_gate_with_scope_and_returns_a_handle() -> None:
    s = Scope(weather_run())
    h = s.called_tool("get_weather")
    assert isinstance(h, AssertionHandle)
    one(s)
    r = s.recorder.records[0]
    assert r.kind == "gate" and r.threshold == 1.0 and r.status == "passed" and r.scope == "turn 1"
    assert r.name == 'called_tool("get_weather")'


# -- succeeded / parked ----------------------------------------------------------------------


def test_succeeded() -> None:
    assert Scope(statuses=["completed", "waiting"]).succeeded().passed
    assert Scope(statuses=["completed", "cancelled"]).succeeded().passed
    h = Scope(
        [ev("turn.failed", error="agent raised KeyError: 'x'")], statuses=["completed", "failed"]
    ).succeeded()
    assert h.status == "failed"
    assert "turn 2 of 2 failed" in h.message and "KeyError" in h.message
    h = Scope(statuses=[]).succeeded()
    assert h.status == "failed" and "no turn settled" in h.message


def test_parked() -> None:
    assert Scope(statuses=["completed", "waiting"]).parked().passed
    h = Scope(statuses=["waiting", "completed"]).parked()
    assert h.status == "failed" and "ended completed, not waiting" in h.message
    assert Scope(statuses=[]).parked().status == "failed"


# -- messages --------------------------------------------------------------------------------


def test_message_includes() -> None:
    s = Scope(weather_run())
    assert s.message_includes("Sunny").passed
    assert s.message_includes(re.compile(r"\d+F")).passed
    h = s.message_includes("Rain")
    assert h.status == "failed"
    assert 'no assistant message includes "Rain"' in h.message
    assert "It is Sunny in Brooklyn" in h.message
    # user messages do not count
    assert s.message_includes("Weather in Brooklyn?").status == "failed"


def test_message_includes_without_messages() -> None:
    h = Scope([]).message_includes("x")
    assert h.status == "failed" and "no assistant message was seen" in h.message


def test_message_includes_wrong_type_is_error() -> None:
    assert Scope(weather_run()).message_includes(3).status == "error"  # type: ignore[arg-type]


# -- called_tool -----------------------------------------------------------------------------


def test_called_tool_input_output_status() -> None:
    s = Scope(weather_run())
    assert s.called_tool("get_weather", input={"city": "Brooklyn"}).passed
    assert s.called_tool("get_weather", output={"sky": includes("sun")}).passed
    assert s.called_tool("get_weather", status="completed").passed
    assert s.called_tool("send_email", status="failed").passed
    assert s.called_tool(re.compile("^get_")).passed  # type: ignore[arg-type]


def test_called_tool_not_called_lists_the_tools_that_were() -> None:
    h = Scope(weather_run()).called_tool("search")
    assert h.status == "failed"
    assert h.message.startswith("search was not called; tools called: ")
    assert 'get_weather({"city": "Brooklyn", "units": "F"}) → completed' in h.message
    assert "send_email" in h.message and "SMTP down" in h.message
    assert h.record.actual[0] == {
        "name": "get_weather",
        "input": {"city": "Brooklyn", "units": "F"},
        "status": "completed",
    }


def test_called_tool_with_input_mismatch_says_why() -> None:
    h = Scope(weather_run()).called_tool("get_weather", input={"city": "NYC"})
    assert h.status == "failed"
    assert 'none matched input={"city": "NYC"}' in h.message
    assert 'input: at $.city: expected "NYC", saw "Brooklyn"' in h.message


def test_called_tool_when_no_tools_at_all() -> None:
    h = Scope([]).called_tool("x")
    assert "no tools were called" in h.message


def test_called_tool_count() -> None:
    events = weather_run() + [
        ev("tool.called", call_id="c3", name="get_weather", input={"city": "Queens"}),
        ev("tool.result", call_id="c3", name="get_weather", output={}, status="completed"),
    ]
    s = Scope(events)
    assert s.called_tool("get_weather", count=2).passed
    assert s.called_tool("get_weather", count=lambda n: n >= 2).passed
    assert s.called_tool("search", count=0).passed
    h = s.called_tool("get_weather", count=3)
    assert h.status == "failed" and "get_weather matched 2 times, expected exactly 3" in h.message
    h = s.called_tool("get_weather", input={"city": "Queens"}, count=2)
    assert (
        h.status == "failed" and "matched 1 time" in h.message and "non-matching calls" in h.message
    )


def test_called_tool_bad_count_is_error() -> None:
    assert Scope(weather_run()).called_tool("get_weather", count="2").status == "error"  # type: ignore[arg-type]


def test_called_tool_raising_predicate_is_error_even_if_soft() -> None:
    s = Scope(weather_run())
    h = s.called_tool("get_weather", input={"city": lambda c: c.nope})
    assert h.status == "error" and "AttributeError" in h.message
    assert h.soft().status == "error"
    h = s.called_tool("get_weather", count=lambda n: 1 / 0)
    assert h.status == "error" and "ZeroDivisionError" in h.message


def test_not_called_tool() -> None:
    s = Scope(weather_run())
    assert s.not_called_tool("delete_everything").passed
    h = s.not_called_tool("send_email")
    assert h.status == "failed"
    assert (
        'send_email was called 1 time: send_email({"to": "a@b.c"}) → failed (SMTP down)'
        == h.message
    )


def test_tool_order() -> None:
    s = Scope(weather_run())
    assert s.tool_order(["get_weather", "send_email"]).passed
    assert s.tool_order(
        [{"name": "get_weather", "input": {"city": "Brooklyn"}}, "send_email"]
    ).passed
    assert s.tool_order(["send_email"]).passed
    assert s.tool_order([]).passed
    h = s.tool_order(["send_email", "get_weather"])
    assert h.status == "failed"
    assert 'step 2 of 2 ("get_weather") was not called after the steps before it' in h.message
    assert "tools called: get_weather(" in h.message
    h = s.tool_order([{"name": "get_weather", "input": {"city": "NYC"}}])
    assert h.status == "failed" and "step 1 of 1" in h.message


def test_tool_order_bad_step_is_error() -> None:
    assert Scope(weather_run()).tool_order([{"tool": "x"}]).status == "error"


def test_used_no_tools() -> None:
    assert Scope([ev("message.completed", role="assistant", text="hi")]).used_no_tools().passed
    h = Scope(weather_run()).used_no_tools()
    assert h.status == "failed" and h.message.startswith("2 tool call(s): get_weather(")


def test_max_tool_calls() -> None:
    s = Scope(weather_run())
    assert s.max_tool_calls(2).passed
    h = s.max_tool_calls(1)
    assert h.status == "failed" and "2 tool calls, more than 1: get_weather(" in h.message
    assert s.max_tool_calls(-1).status == "error"


def test_no_failed_actions() -> None:
    ok_run = [
        ev("tool.called", call_id="a", name="t", input={}),
        ev("tool.result", call_id="a", name="t", output=1, status="completed"),
        ev("command.completed", command="pytest -q", exit_code=0, output=""),
        ev("turn.completed"),
    ]
    assert Scope(ok_run).no_failed_actions().passed
    h = Scope(weather_run()).no_failed_actions()
    assert h.status == "failed" and "tool send_email failed: SMTP down" in h.message
    h = Scope([ev("command.completed", command="make", exit_code=2, output="")]).no_failed_actions()
    assert h.status == "failed" and 'command "make" exited 2' in h.message
    h = Scope([ev("turn.failed", error="boom")], statuses=["failed"]).no_failed_actions()
    assert h.status == "failed" and "turn failed: boom" in h.message
    assert Scope([], statuses=["failed"]).no_failed_actions().status == "failed"
    # The command harness's own program ending non-zero is a failed action too.
    h = Scope([ev("process.exited", command="python3 agent.py", exit_code=3)]).no_failed_actions()
    assert h.status == "failed" and 'agent program "python3 agent.py" exited 3' in h.message
    assert Scope([ev("process.exited", command="true", exit_code=0)]).no_failed_actions().passed


# -- events ----------------------------------------------------------------------------------


def test_event() -> None:
    s = Scope(weather_run())
    assert s.event("turn.completed").passed
    assert s.event("tool.result", data={"name": "get_weather", "output": {"high": 71}}).passed
    assert s.event("message.completed", count=2).passed
    assert s.event("message.completed", data={"role": "assistant"}, count=lambda n: n == 1).passed
    assert s.event("turn.failed", count=0).passed


def test_event_failures_say_what_was_seen() -> None:
    s = Scope(weather_run())
    h = s.event("input.requested")
    assert h.status == "failed"
    assert h.message.startswith("no input.requested event; event types seen: session.started ×1")
    assert "tool.called ×2" in h.message
    h = s.event("tool.result", data={"name": "get_weather", "output": {"high": 90}})
    assert h.status == "failed"
    assert "no tool.result event matched" in h.message
    assert "data at $.output.high: expected 90, saw 71" in h.message
    h = s.event("message.completed", count=3)
    assert (
        h.status == "failed"
        and "2 message.completed event(s) matched, expected exactly 3" in h.message
    )


def test_event_raising_predicate_is_error() -> None:
    h = Scope(weather_run()).event("tool.called", data={"input": lambda i: i["missing"]})
    assert h.status == "error" and "KeyError" in h.message


def test_not_event() -> None:
    s = Scope(weather_run())
    assert s.not_event("turn.failed").passed
    assert s.not_event("tool.result", data={"status": "cancelled"}).passed
    h = s.not_event("tool.result", data={"status": "failed"})
    assert h.status == "failed"
    assert h.message.startswith("saw 1 tool.result event(s): tool.result {")
    assert "SMTP down" in h.message


def test_event_order() -> None:
    s = Scope(weather_run())
    assert s.event_order(["turn.started", "tool.called", "turn.completed"]).passed
    assert s.event_order(
        [{"type": "tool.called", "data": {"name": "send_email"}}, "turn.completed"]
    ).passed
    h = s.event_order(["turn.completed", "turn.started"])
    assert h.status == "failed"
    assert 'step 2 of 2 ("turn.started") not seen' in h.message
    assert "events in order: session.started, turn.started" in h.message
    assert s.event_order([{"kind": "x"}]).status == "error"


def test_events_satisfy() -> None:
    s = Scope(weather_run())
    h = s.events_satisfy("under ten events", lambda evs: len(evs) < 10)
    assert h.passed and h.record.label == "under ten events"
    assert h.record.display_name == "under ten events"
    h = s.events_satisfy(
        "no emails", lambda evs: not any(e.get("name") == "send_email" for e in evs)
    )
    assert h.status == "failed" and "no emails was not satisfied" in h.message
    h = s.events_satisfy("explained", lambda evs: (False, "saw an email"))
    assert h.status == "failed" and "saw an email" in h.message
    h = s.events_satisfy("buggy", lambda evs: evs[100])
    assert h.status == "error" and "IndexError" in h.message
    assert h.at_least(0).status == "error"


# -- output ----------------------------------------------------------------------------------


def test_output_equals_is_exact() -> None:
    s = Scope(output={"city": "Brooklyn", "high": 71})
    assert s.output_equals({"city": "Brooklyn", "high": 71}).passed
    h = s.output_equals({"city": "Brooklyn"})
    assert h.status == "failed" and "unexpected key(s) 'high'" in h.message
    h = s.output_equals({"city": "Queens", "high": 71})
    assert h.status == "failed"
    assert 'at $.city: expected "Queens", saw "Brooklyn"' in h.message and "output was" in h.message
    assert Scope(output="done").output_equals("done").passed
    assert Scope(output=None).output_equals(None).passed
    h = Scope(output="done").output_equals("finished")
    assert h.status == "failed" and 'saw "done"' in h.message


def test_output_matches_pydantic() -> None:
    pydantic = pytest.importorskip("pydantic")

    class Forecast(pydantic.BaseModel):
        city: str
        high: int

    assert Scope(output={"city": "Brooklyn", "high": 71}).output_matches(Forecast).passed
    # JSON text returned as a message is decoded, fenced or not
    assert Scope(output='{"city": "Brooklyn", "high": 71}').output_matches(Forecast).passed
    assert (
        Scope(output='```json\n{"city": "Brooklyn", "high": 71}\n```')
        .output_matches(Forecast)
        .passed
    )
    h = Scope(output={"city": "Brooklyn", "high": "warm"}).output_matches(Forecast)
    assert h.status == "failed" and "output is not a valid Forecast: high:" in h.message
    assert h.record.name == "output_matches(Forecast)"
    h = Scope(output=None).output_matches(Forecast)
    assert h.status == "failed" and "no output" in h.message


def test_output_matches_json_schema() -> None:
    pytest.importorskip("jsonschema")
    schema = {
        "type": "object",
        "required": ["city", "days"],
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "array", "items": {"type": "integer"}},
        },
    }
    assert Scope(output={"city": "x", "days": [1, 2]}).output_matches(schema).passed
    h = Scope(output={"city": "x", "days": [1, "two"]}).output_matches(schema)
    assert h.status == "failed"
    assert "at $.days[1]" in h.message and "'two' is not of type 'integer'" in h.message
    h = Scope(output={"city": "x"}).output_matches({"type": "nonsense"})
    assert h.status == "error" and "schema is invalid" in h.message


def test_output_matches_without_jsonschema_is_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_jsonschema(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "jsonschema" or name.startswith("jsonschema."):
            raise ImportError("No module named 'jsonschema'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_jsonschema)
    h = Scope(output={"a": 1}).output_matches({"type": "object"})
    assert h.status == "error" and "needs the jsonschema package" in h.message


def test_output_matches_wrong_spec_is_error() -> None:
    h = Scope(output={"a": 1}).output_matches(42)
    assert h.status == "error" and "pydantic model class or a JSON schema" in h.message


# -- robustness ------------------------------------------------------------------------------


def test_a_scope_that_raises_records_an_error() -> None:
    class Broken(Scope):
        def _assert_events(self) -> Sequence[Event]:
            raise RuntimeError("event store unavailable")

    s = Broken()
    h = s.called_tool("x")
    assert h.status == "error" and "event store unavailable" in h.message
    one(s)


def test_long_messages_are_truncated() -> None:
    long = "word " * 2000
    h = Scope([ev("message.completed", role="assistant", text=long)]).message_includes("zzz")
    assert h.status == "failed" and len(h.message) < 600 and "… (+" in h.message
