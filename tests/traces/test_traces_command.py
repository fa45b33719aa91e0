"""A command agent instrumented with the OpenTelemetry SDK, run by the real runner under local and
bwrap (network closed): its spans become the trial's events, and the usual checks read them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from project_support import assert_passed, eval_file
from traces_support import SCRIPTED_EVAL, variant, write_agents

CASES = {
    "evals/scripted.eval.py": SCRIPTED_EVAL,
    "evals/declared.eval.py": eval_file('''
        def validate(context):
            calls = {c.name: c for c in context.tool_calls()}
            ok = (calls["get_weather"].input == {"city": "Rome"} and calls["get_weather"].status == "completed"
                  and calls["get_alerts"].status == "failed"
                  and calls["get_alerts"].error == "alerts service unavailable")
            return ok, f"tool calls seen: {[c.to_dict() for c in context.tool_calls()]}"

        declared = define_eval(prompt="weather in Rome?", validate=validate)
    '''),
}


JSON = {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}
GZIP = {"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"}


@pytest.mark.parametrize(("sandbox", "script", "extra"), [
    ("local", "otel_protobuf.py", {}), ("local", "otel_json.py", JSON), ("local", "otel_protobuf.py", GZIP),
    ("bwrap", "otel_protobuf.py", {}), ("bwrap", "otel_json.py", JSON),
], ids=["local-protobuf", "local-json", "local-protobuf-gzip", "bwrap-protobuf", "bwrap-json"])
def test_spans_of_a_command_agent_become_its_events(make_project: Any, tmp_path: Path, sandbox: str,
                                                    script: str, extra: dict[str, str]) -> None:
    agents = write_agents(tmp_path / "otel_agents")
    config = ("from anpord import Variant, define_eval_config\n"
              f"config = define_eval_config(timeout=60, variants=[{variant(sandbox, agents, script, **extra)}])\n")
    project = make_project(CASES, config=config)
    run = project.run(timeout=180)
    assert run.code == 0, run.output
    assert_passed(run, "scripted")
    declared = run.result("declared")
    assert declared["verdict"] == "passed", (declared["reason"], run.trial("declared")["logs"])
    events = run.events("scripted")
    traced = [e for e in events if e.get("source") == "trace"]
    assert sorted(e["type"] for e in traced) == [
        "model.called", "span", "tool.called", "tool.called", "tool.result", "tool.result"]
    agent_span = next(e for e in traced if e["type"] == "span")
    # Nesting: every other span is a child of the agent's span, in the same trace.
    assert agent_span["parent_span_id"] is None
    assert agent_span["attributes"]["gen_ai.agent.name"] == "weather"
    for e in traced:
        assert e["trace_id"] == agent_span["trace_id"]
        if e is not agent_span:
            assert e["parent_span_id"] == agent_span["span_id"], e
    # The spans arrived while the turn ran: they belong to its session.
    assert all(e["session_id"] for e in traced)
    # Usage from the trace counts when nothing else reported it.
    assert run.result("scripted")["usage"]["input_tokens"] == 120
    assert run.result("scripted")["usage"]["output_tokens"] == 30
    # Priced from anpord's table: gpt-4o at $2.50 / $10 per million tokens.
    assert abs(run.result("scripted")["usage"]["cost"] - (120 * 2.5 + 30 * 10) / 1e6) < 1e-12

