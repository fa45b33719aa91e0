"""Agents instrumented with the real OpenTelemetry SDK, for the trace tests: a command agent that
exports with the SDK's OTLP/HTTP protobuf exporter, one that exports OTLP/JSON (the Python SDK has
no JSON exporter: a small SpanExporter encodes the SDK's own OTLP message as OTLP/JSON), and the
variant settings that let them run under bwrap (the venv's packages mounted read-only)."""

from __future__ import annotations

import site
import sys
from pathlib import Path

from project_support import eval_file

SITE_PACKAGES = next(p for p in site.getsitepackages() if p.endswith("site-packages"))

# What every agent does: an agent span holding a model call and a tool call (its arguments and
# result as JSON), then a second tool call that fails; it prints its answer.
_BODY = '''
import json, os, sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Status, StatusCode

provider = TracerProvider()  # its resource reads OTEL_RESOURCE_ATTRIBUTES
provider.add_span_processor(BatchSpanProcessor(make_exporter()))
trace.set_tracer_provider(provider)
tracer = trace.get_tracer("weather-agent")
city = os.environ.get("ANPORD_PROMPT", "").split()[-1].strip("?")
with tracer.start_as_current_span("invoke_agent weather", attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather"}):
    with tracer.start_as_current_span("chat gpt-4o", attributes={
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 120, "gen_ai.usage.output_tokens": 30,
        "gen_ai.response.id": "chatcmpl-1"}):
        pass
    with tracer.start_as_current_span("execute_tool get_weather", attributes={
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather", "gen_ai.tool.call.id": "call_1",
        "gen_ai.tool.call.arguments": json.dumps({"city": city}),
        "gen_ai.tool.call.result": json.dumps({"forecast": "sunny", "temp_c": 21})}):
        pass
    with tracer.start_as_current_span("execute_tool get_alerts", attributes={
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_alerts",
        "gen_ai.tool.call.arguments": json.dumps({"city": city})}) as span:
        span.set_status(Status(StatusCode.ERROR, "alerts service unavailable"))
print(f"It is sunny in {city}")
provider.shutdown()
'''

PROTOBUF_AGENT = '''
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

def make_exporter():
    return OTLPSpanExporter()  # OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
''' + _BODY

JSON_AGENT = '''
import os, json, urllib.request
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

def _hex_ids(value):
    # OTLP/JSON writes ids as hex, where protobuf's JSON mapping writes base64.
    import base64
    if isinstance(value, dict):
        return {k: (base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") else _hex_ids(v))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_hex_ids(v) for v in value]
    return value

class JsonExporter(SpanExporter):
    def export(self, spans):
        # The variant chose JSON; the signal's own variable, which SDKs read first, says so too.
        assert os.environ["OTEL_EXPORTER_OTLP_PROTOCOL"] == "http/json"
        assert os.environ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] == "http/json"
        doc = _hex_ids(json_format.MessageToDict(encode_spans(spans), use_integers_for_enums=True))
        request = urllib.request.Request(os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"],
                                         data=json.dumps(doc).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            response.read()
        return SpanExportResult.SUCCESS

def make_exporter():
    return JsonExporter()
''' + _BODY


def write_agents(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "otel_protobuf.py").write_text(PROTOBUF_AGENT)
    (folder / "otel_json.py").write_text(JSON_AGENT)
    return folder


def variant(sandbox: str, agents: Path, script: str, **extra: str) -> str:
    """A ``Variant(...)`` expression for the config: the system's python3 under bwrap (the venv's
    own interpreter is not inside), with the venv's packages on its path."""
    python = "python3" if sandbox == "bwrap" else sys.executable
    env = {"PYTHONPATH": SITE_PACKAGES, **extra}
    return (f"Variant(name={script!r}, sandbox={sandbox!r}, traces='otlp', "
            f"harness={f'command:{python} {agents / script}'!r}, env={env!r}, "
            f"mounts=[{str(agents)!r}, {SITE_PACKAGES!r}])")


# A scripted case over the agents above: the usual checks, on what the spans said.
SCRIPTED_EVAL = eval_file('''
    @define_eval
    async def scripted(t):
        turn = await t.send("weather in Paris?")
        t.called_tool("get_weather", input={"city": "Paris"}, output={"forecast": "sunny", "temp_c": 21})
        turn.called_tool("get_weather")
        t.session.called_tool("get_alerts")
        t.event("model.called", {"provider": "openai", "model": "gpt-4o", "input_tokens": 120})
        t.event("span", {"name": "invoke_agent weather"})
        t.check(t.reply, includes("sunny in Paris"))
        END
'''.replace("END", 't.check("end", equals("end")).label("reached the end")'))
