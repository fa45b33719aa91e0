"""Python agents instrumented with the OpenTelemetry API run in the runner's process: their spans
are routed to the trial whose context made them, however many trials run at once."""

from __future__ import annotations

import os
from typing import Any

from project_support import assert_passed, eval_file, run_env

AGENT = '''
import asyncio, json, random, threading
from opentelemetry import trace

tracer = trace.get_tracer("py-agent")  # at import, before anpord set a provider: still routed


async def agent(turn):
    city = turn.input.split()[-1]
    with tracer.start_as_current_span("invoke_agent", attributes={"gen_ai.operation.name": "invoke_agent"}):
        await asyncio.sleep(random.random() / 50)  # the trials' spans interleave
        with tracer.start_as_current_span("chat", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "m1",
                "gen_ai.usage.prompt_tokens": 7, "gen_ai.usage.completion_tokens": 3}):
            await asyncio.sleep(random.random() / 50)
        with tracer.start_as_current_span("execute_tool lookup", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.arguments": json.dumps({"city": city})}):
            await asyncio.sleep(random.random() / 50)
        if city == "Oslo":
            turn.usage(input_tokens=1000, output_tokens=1)  # the harness's own report wins
    return f"looked up {city}"


async def late_agent(turn):
    # Its tool span ends after the turn has settled (a task of its own finishing the work).
    span = tracer.start_span("execute_tool audit", attributes={
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.arguments": '{"what": "late"}'})

    async def finish():
        await asyncio.sleep(0.05)
        span.end()

    asyncio.get_running_loop().call_soon(lambda: _keep.add(asyncio.ensure_future(finish())))
    return "done"


_keep = set()


def sync_agent(turn):
    # OpenInference's names, in a thread of anpord's pool (the trial's context is copied there).
    city = turn.input.split()[-1]
    with tracer.start_as_current_span("Agent", attributes={"openinference.span.kind": "AGENT"}):
        with tracer.start_as_current_span("ChatCompletion", attributes={
                "openinference.span.kind": "LLM", "llm.provider": "anthropic", "llm.model_name": "claude-x",
                "llm.token_count.prompt": 11, "llm.token_count.completion": 4}):
            pass
        with tracer.start_as_current_span("lookup", attributes={
                "openinference.span.kind": "TOOL", "tool.name": "lookup",
                "input.value": json.dumps({"city": city}), "output.value": "cold"}):
            pass
    return f"looked up {city}"
'''

CITIES = ["Paris", "Rome", "Oslo", "Lima", "Kyiv", "Baku", "Doha", "Riga"]

CASES = {
    "agents/otel_py.py": AGENT,
    "evals/lookup.eval.py": eval_file(f'''
        @define_eval(each={CITIES!r}, id=lambda row: row)
        async def test(t, city):
            await t.send(f"weather in {{city}}")
            t.called_tool("lookup", input={{"city": city}})
            t.max_tool_calls(1)  # none of another trial's
            t.event("model.called", count=1)
            t.check(t.reply, equals(f"looked up {{city}}"))
            {'t.check("end", equals("end")).label("reached the end")'}
    '''),
}


def _config(harness: str) -> str:
    return ("from anpord import Variant, define_eval_config\n"
            "config = define_eval_config(timeout=30, trials=3, max_concurrency=24, variants=[\n"
            f"    Variant(name='traced', harness={harness!r}, traces='otlp')])\n")


def test_concurrent_python_trials_get_their_own_spans(make_project: Any) -> None:
    project = make_project(CASES, config=_config("python:agents.otel_py:agent"))
    run = project.run(timeout=120)
    assert run.code == 0, run.output
    for city in CITIES:
        for trial in range(3):
            line = assert_passed(run, f"lookup/{city.lower()}", trial)
            events = run.events(f"lookup/{city.lower()}", trial)
            traced = [e for e in events if e.get("source") == "trace"]
            assert sorted(e["type"] for e in traced) == ["model.called", "span", "tool.called", "tool.result"]
            root = next(e for e in traced if e["type"] == "span")
            assert {e["trace_id"] for e in traced} == {root["trace_id"]}
            model = next(e for e in traced if e["type"] == "model.called")
            # The deprecated names are read.
            assert (model["provider"], model["model"], model["input_tokens"]) == ("openai", "m1", 7)
            if city == "Oslo":
                assert line["usage"]["input_tokens"] == 1000  # the harness reported: not added twice
            else:
                assert line["usage"]["input_tokens"] == 7 and line["usage"]["output_tokens"] == 3


def test_a_sync_agent_with_openinference_names(make_project: Any) -> None:
    project = make_project(CASES, config=_config("python:agents.otel_py:sync_agent"))
    run = project.run(timeout=120)
    assert run.code == 0, run.output
    events = run.events("lookup/rome", 0)
    call = next(e for e in events if e["type"] == "tool.result")
    assert (call["name"], call["output"], call["status"]) == ("lookup", "cold", "completed")
    model = next(e for e in events if e["type"] == "model.called")
    assert (model["provider"], model["model"], model["input_tokens"], model["output_tokens"]) == (
        "anthropic", "claude-x", 11, 4)
    span = next(e for e in events if e["type"] == "span")
    assert span["operation"] == "invoke_agent" and span["parent_span_id"] is None


def test_a_span_ending_after_its_turn_settled_is_folded_in_until_the_checks_run(make_project: Any) -> None:
    project = make_project({
        "agents/otel_py.py": AGENT,
        "evals/late.eval.py": eval_file('''
            @define_eval
            async def test(t):
                turn = await t.send("go")
                turn.used_no_tools()  # the span had not ended when the turn settled
                for _ in range(500):  # wait for it: a condition, bounded
                    if any(e.type == "tool.result" for e in t.events):
                        break
                    await asyncio.sleep(0.01)
                t.called_tool("audit", input={"what": "late"})
                t.check("end", equals("end")).label("reached the end")
        '''),
    }, config=_config("python:agents.otel_py:late_agent").replace("trials=3", "trials=1"))
    run = project.run(timeout=60)
    assert run.code == 0, run.output
    assert_passed(run, "late")
    called = next(e for e in run.events("late") if e["type"] == "tool.called")
    assert "session_id" not in called  # no turn was running: the trial's own events


OWN_PROVIDER = """
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)  # the agent's own set-up, before anpord's
tracer = trace.get_tracer("own")


async def agent(turn):
    with tracer.start_as_current_span("execute_tool note", attributes={"gen_ai.operation.name": "execute_tool"}):
        pass
    return f"my exporter has {len(exporter.get_finished_spans())}"
"""


def test_an_agent_with_its_own_provider_keeps_its_exporters(make_project: Any) -> None:
    project = make_project({
        "agents/own.py": OWN_PROVIDER,
        "evals/own.eval.py": eval_file("""
            @define_eval
            async def test(t):
                await t.send("go")
                t.called_tool("note")
                t.check(t.reply, equals("my exporter has 1"))
                t.check("end", equals("end")).label("reached the end")
        """),
    }, config=_config("python:agents.own:agent").replace("trials=3", "trials=1"))
    run = project.run(timeout=60)
    assert run.code == 0, run.output
    assert_passed(run, "own")


NO_SDK = '''
import sys


class _NoSdk:
    """This process without the OpenTelemetry SDK, as a fresh virtualenv is."""

    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry.sdk" or name.startswith("opentelemetry.sdk."):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None


sys.meta_path.insert(0, _NoSdk())
'''


def test_without_the_sdk_the_run_says_so_before_it_starts(make_project: Any, tmp_path: Any) -> None:
    blocker = tmp_path / "no-sdk"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(NO_SDK)
    project = make_project(
        {"evals/plain.eval.py": eval_file("""
            from anpord import define_eval

            @define_eval
            async def test(t):
                await t.send("hello")
                t.succeeded()
        """)},
        config=(
            "from anpord import Variant, define_eval_config\n"
            "config = define_eval_config(timeout=20, variants=[\n"
            "    Variant(name='traced', harness='python:agents.kit:agent', traces='otlp')])\n"
        ),
    )
    run = project.run(env={"PYTHONPATH": os.pathsep.join([str(blocker), run_env()["PYTHONPATH"]])})
    notes = [line for line in run.stderr.splitlines() if "OpenTelemetry SDK" in line]
    assert notes == ["anpord eval: note: variant traced traces a Python agent, but the OpenTelemetry "
                     "SDK is not installed here, so its spans will not be recorded: "
                     "pip install 'anpord[traces]' (opentelemetry-sdk)"], run.stderr
    assert "OpenTelemetry SDK" not in project.run().stderr  # with it installed: nothing to say


BATCHED = '''
import asyncio
from opentelemetry import trace

tracer = trace.get_tracer("batched")


async def agent(turn):
    # Spans ended with no await between them and the agent's return: they become events together,
    # after the agent returned, and still before its turn settles.
    for name in ("first", "second"):
        with tracer.start_as_current_span(f"execute_tool {name}", attributes={"gen_ai.operation.name": "execute_tool"}):
            pass
    await asyncio.sleep(0)
    with tracer.start_as_current_span("execute_tool third", attributes={"gen_ai.operation.name": "execute_tool"}):
        pass
    return "done"
'''


def _one_trial(make_project: Any, module: str, source: str, body: str) -> tuple[Any, dict[str, Any]]:
    """One trial of ``agents/<module>.py:agent``, traced, whose test is ``body``: the run and the
    trial's line (it passed)."""
    project = make_project({f"agents/{module}.py": source, "evals/one.eval.py": eval_file(body)},
                           config=_config(f"python:agents.{module}:agent").replace("trials=3", "trials=1"))
    run = project.run(timeout=60)
    assert run.code == 0, run.output
    return run, assert_passed(run, "one")


def test_spans_ended_just_before_the_agent_returns_are_in_its_turn(make_project: Any) -> None:
    run, _ = _one_trial(make_project, "batched", BATCHED, '''
        @define_eval
        async def test(t):
            turn = await t.send("go")
            turn.called_tool("first")
            turn.called_tool("second")
            turn.called_tool("third")
            t.check("end", equals("end")).label("reached the end")
    ''')
    names = [e["name"] for e in run.events("one") if e["type"] == "tool.called"]
    assert names == ["first", "second", "third"]


USAGE_AGENT = '''
from opentelemetry import trace

tracer = trace.get_tracer("usage-agent")


async def agent(turn):
    with tracer.start_as_current_span("chat m1", attributes={
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "m1",
            "gen_ai.usage.input_tokens": 7, "gen_ai.usage.output_tokens": 3}):
        turn.usage(input_tokens=700, output_tokens=30)  # the harness's report of this call
    with tracer.start_as_current_span("chat m2", attributes={
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "m2",
            "gen_ai.usage.input_tokens": 5, "gen_ai.usage.output_tokens": 2}):
        pass  # reported by the trace alone
    return "done"
'''


def test_a_python_agent_reporting_one_of_two_calls_counts_the_other_from_its_trace(make_project: Any) -> None:
    _, line = _one_trial(make_project, "usage_agent", USAGE_AGENT, '''
        @define_eval
        async def test(t):
            await t.send("go")
            t.event("model.called", count=2)
            t.check("end", equals("end")).label("reached the end")
    ''')
    assert (line["usage"]["input_tokens"], line["usage"]["output_tokens"]) == (705, 32)


def test_a_python_agents_span_ending_after_the_checks_ran_is_not_kept() -> None:
    """In this process, as a Python agent's spans are: routed by the trial's context."""
    import asyncio

    from opentelemetry import trace

    from anpord.authoring import Variant
    from anpord.events import Event
    from anpord.runner._services import ServiceContext
    from anpord.traces import TraceService

    async def main() -> tuple[list[Event], list[str]]:
        events: list[Event] = []
        logs: list[str] = []
        service = TraceService()
        variant = Variant(harness="python:agents.x:agent", traces="otlp")
        await service.start(ServiceContext(variant, "case v #0", None, logs.append, events.append))
        tracer = trace.get_tracer("late-in-process")
        with tracer.start_as_current_span("in time"):
            pass
        late = tracer.start_span("late")  # started in the trial's context, ended once sealed
        await service.settle()
        service.seal()
        late.end()
        await service.stop()
        return events, logs

    events, logs = asyncio.run(main())
    assert [e.data["name"] for e in events] == ["in time"]
    assert "traces: 1 span(s) arrived after the trial's checks ran: not kept" in logs


LIVE = '''
import asyncio
from opentelemetry import trace

tracer = trace.get_tracer("live")


async def agent(turn):
    with tracer.start_as_current_span("execute_tool first", attributes={"gen_ai.operation.name": "execute_tool"}):
        pass
    await asyncio.sleep(0.3)  # still running while the test looks for the span's events
    return "done"
'''


def test_a_span_is_in_its_turn_as_soon_as_it_ends(make_project: Any) -> None:
    _, line = _one_trial(make_project, "live", LIVE, '''
        @define_eval
        async def test(t):
            live = await t.start("go")
            event = await live.wait_for_event("tool.result", {"name": "first"}, timeout=5)
            t.check(live.done, equals(False)).label("seen while the agent ran")
            t.check(event.data["source"], equals("trace"))
            turn = await live.result()
            turn.called_tool("first")
            t.check("end", equals("end")).label("reached the end")
    ''')
    assert line["verdict"] == "passed"


UNREADABLE = '''
from opentelemetry import trace

tracer = trace.get_tracer("unreadable")


class Odd:
    """An attribute value no span could hold: set behind the SDK's back, as a buggy library might."""


async def agent(turn):
    with tracer.start_as_current_span("odd") as span:
        span._attributes._dict = None  # what the mapping reads of it: now unreadable
        span._attributes = Odd()
    with tracer.start_as_current_span("execute_tool fine", attributes={"gen_ai.operation.name": "execute_tool"}):
        pass
    return "done"
'''


def test_a_span_that_cannot_be_read_is_logged_and_the_agent_goes_on(make_project: Any) -> None:
    run, line = _one_trial(make_project, "unreadable", UNREADABLE, '''
        @define_eval
        async def test(t):
            turn = await t.send("go")
            t.check(turn.message, equals("done"))
            turn.called_tool("fine")
            t.check("end", equals("end")).label("reached the end")
    ''')
    assert any("traces: a span of this process could not be read" in log for log in line["logs"]), line["logs"]
    assert [e["name"] for e in run.events("one") if e.get("source") == "trace"] == ["fine", "fine"]


INTERLEAVED = '''
from opentelemetry import trace

tracer = trace.get_tracer("interleaved")


async def agent(turn):
    with tracer.start_as_current_span("execute_tool before", attributes={"gen_ai.operation.name": "execute_tool"}):
        pass
    turn.usage(input_tokens=3, output_tokens=1)  # an event of the agent's own, between two spans
    with tracer.start_as_current_span("execute_tool after", attributes={"gen_ai.operation.name": "execute_tool"}):
        pass
    return "done"
'''


def test_spans_keep_their_place_among_the_agents_own_events(make_project: Any) -> None:
    """Spans ended on the loop are read in batches: each still lands where it ended, before the
    agent's next event and before the turn's end, in the turn's events and in the record."""
    run, _ = _one_trial(make_project, "interleaved", INTERLEAVED, '''
        @define_eval
        async def test(t):
            turn = await t.send("go")
            kinds = [(e.type, e.data.get("name")) for e in turn.events
                     if e.type in ("tool.called", "usage", "turn.completed")]
            t.check(kinds, equals([("tool.called", "before"), ("usage", None), ("tool.called", "after"),
                                   ("turn.completed", None)]))
            t.check("end", equals("end")).label("reached the end")
    ''')
    order = [(e["type"], e.get("name")) for e in run.events("one")
             if e["type"] in ("tool.called", "tool.result", "usage", "turn.completed")]
    assert order == [("tool.called", "before"), ("tool.result", "before"), ("usage", None),
                     ("tool.called", "after"), ("tool.result", "after"), ("turn.completed", None)]


BACKGROUND_AGENT = '''
import asyncio
from opentelemetry import trace

tracer = trace.get_tracer("background")
_keep = set()


async def _later():
    await asyncio.sleep(0.2)  # ends while the declarative case's validate runs
    with tracer.start_as_current_span("execute_tool after_turn", attributes={"gen_ai.operation.name": "execute_tool"}):
        pass


async def agent(turn):
    with tracer.start_as_current_span("execute_tool now", attributes={"gen_ai.operation.name": "execute_tool"}):
        pass
    _keep.add(asyncio.get_running_loop().create_task(_later()))
    return "ok"
'''


def test_a_span_ending_once_declarative_checks_began_is_not_kept_and_the_log_says_so(make_project: Any) -> None:
    """What the checks saw and what the record keeps agree: the span that ended during validate
    is in neither, and the log counts it."""
    project = make_project({
        "agents/background.py": BACKGROUND_AGENT,
        "evals/decl.eval.py": eval_file('''
            async def saw(context):
                await asyncio.sleep(0.6)  # the background span ends meanwhile
                return True, "tools: " + ",".join(c.name for c in context.tool_calls())

            decl = define_eval(prompt="hi", validate=saw)
        '''),
    }, config=_config("python:agents.background:agent").replace("trials=3", "trials=1"))
    run = project.run(timeout=60)
    assert run.code == 0, run.output
    assert run.assertions("decl")["saw"]["message"] == "tools: now"
    kept = [e["name"] for e in run.events("decl") if e["type"] == "tool.called"]
    assert kept == ["now"]
    assert "traces: 1 span(s) arrived after the trial's checks ran: not kept" in run.trial("decl")["logs"]
