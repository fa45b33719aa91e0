"""An HTTP agent (``anpord serve`` of a Python agent instrumented with the OpenTelemetry SDK and its
OTLP/HTTP exporter, a process of its own): anpord sends each trial's trace id in ``traceparent``,
the server's spans continue it and come back to anpord's receiver on the server's export port,
and each lands in its own trial, however many run at once."""

from __future__ import annotations

import socket
from typing import Any

from project_support import assert_passed, eval_file
from serve_support import serve

AGENT = '''
import asyncio, json, random
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

provider = TracerProvider()
provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # OTEL_EXPORTER_OTLP_*
trace.set_tracer_provider(provider)
tracer = trace.get_tracer("served-agent")


async def agent(turn):
    city = turn.input.split()[-1]
    with tracer.start_as_current_span("invoke_agent", attributes={"gen_ai.operation.name": "invoke_agent"}):
        await asyncio.sleep(random.random() / 50)
        with tracer.start_as_current_span("execute_tool lookup", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.arguments": json.dumps({"city": city})}):
            await asyncio.sleep(random.random() / 50)
    return f"looked up {city}"
'''

CITIES = ["Paris", "Rome", "Oslo", "Lima", "Kyiv", "Baku"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _lookup_run(make_project: Any, batch_delay_ms: int, options: str = "") -> Any:
    """Two trials of each city's lookup, 12 at once, through ``anpord serve`` of ``AGENT``, whose
    exporter batches its spans every ``batch_delay_ms``; ``options`` adds to the variant's."""
    port = _free_port()
    project = make_project({
        "agents/otel_served.py": AGENT,
        "evals/lookup.eval.py": eval_file(f"""
            @define_eval(each={CITIES!r}, id=lambda row: row)
            async def test(t, city):
                turn = await t.send(f"weather in {{city}}")
                turn.called_tool("lookup", input={{"city": city}})  # arrived before the turn settled
                t.max_tool_calls(1)
                t.check("end", equals("end")).label("reached the end")
        """),
    }, config="")
    server = serve("agents.otel_served:agent", project.folder, env={
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"http://127.0.0.1:{port}/v1/traces",
        "OTEL_BSP_SCHEDULE_DELAY": str(batch_delay_ms),
    })
    try:
        project.write({"evals/evals.config.py": (
            "from anpord import Variant, define_eval_config\n"
            "config = define_eval_config(timeout=30, trials=2, max_concurrency=12, variants=[\n"
            f"    Variant(name='served', harness={server.url!r}, traces='otlp', "
            f"options={{'traces_port': {port}{options}}})])\n")})
        run = project.run(timeout=120)
    finally:
        server.stop()
    assert run.code == 0, run.output + server.output
    return run


def _traced(run: Any, city: str, trial: int) -> list[dict[str, Any]]:
    return [e for e in run.events(f"lookup/{city.lower()}", trial) if e.get("source") == "trace"]


def test_an_http_agents_spans_come_back_to_their_trials(make_project: Any) -> None:
    run = _lookup_run(make_project, 50)
    for city in CITIES:
        for trial in range(2):
            assert_passed(run, f"lookup/{city.lower()}", trial)
            traced = _traced(run, city, trial)
            assert sorted(e["type"] for e in traced) == ["span", "tool.called", "tool.result"], traced
            assert len({e["trace_id"] for e in traced}) == 1


def test_without_spans_a_turn_waits_its_traces_wait_then_says_why(make_project: Any) -> None:
    port = _free_port()
    project = make_project({
        "agents/plain.py": "async def agent(turn):\n    return 'hi'\n",
        "evals/plain.eval.py": eval_file("""
            @define_eval
            async def test(t):
                await t.send("hello")
                t.check(t.reply, equals("hi"))
        """),
    }, config="")
    server = serve("agents.plain:agent", project.folder)
    try:
        project.write({"evals/evals.config.py": (
            "from anpord import Variant, define_eval_config\n"
            "config = define_eval_config(timeout=30, variants=[\n"
            f"    Variant(name='plain', harness={server.url!r}, traces='otlp', "
            f"options={{'traces_port': {port}, 'traces_wait': 0.2}})])\n")})
        run = project.run(timeout=60)
    finally:
        server.stop()
    assert run.code == 0, run.output
    logs = "\n".join(run.trial("plain")["logs"])
    assert "no span of this turn arrived within 0.2s" in logs and f"127.0.0.1:{port}" in logs, logs


def test_anpord_serve_sends_a_traced_turns_spans_as_the_turn_ends(make_project: Any) -> None:
    """The agent's batch exporter waits a minute between exports: ``anpord serve`` still has the
    turn's spans exported as the turn ends, so the client finds them well inside a
    ``traces_wait`` of 3 s instead of giving up on them. Turns ending together share flushes."""
    run = _lookup_run(make_project, 60000, ", 'traces_wait': 3")
    for city in CITIES:
        for trial in range(2):
            assert_passed(run, f"lookup/{city.lower()}", trial)
            logs = "\n".join(run.trial(f"lookup/{city.lower()}", trial)["logs"])
            assert "no span of this turn arrived" not in logs, logs
            traced = _traced(run, city, trial)
            assert sorted(e["type"] for e in traced) == ["span", "tool.called", "tool.result"], traced
