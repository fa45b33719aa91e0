"""The limits a trial's receiver applies to span values — strings, JSON tool arguments and
results, arrays, maps — the same over OTLP protobuf, OTLP/JSON and in this process, with the
trial's log saying once that something was cut. Real exporters over loopback, the real SDK."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import Callable
from typing import Any

from anpord.authoring import Variant
from anpord.events import Event
from anpord.runner._services import ServiceContext
from anpord.traces import TraceService
from anpord.traces._spans import MAX_ARRAY, MAX_ATTRIBUTES, MAX_STRING

BIG_ARGS = json.dumps({"path": "notes.txt", "content": "x" * 68_000})  # past MAX_STRING, JSON
PLAIN = "y" * (MAX_STRING + 10)  # past MAX_STRING, not JSON


# Two tool spans past the string limits, then a plain span past the array limit.
NAMES = ("execute_tool write", "execute_tool again", "numbers")


def _attributes(name: str) -> dict[str, Any]:
    if name == "numbers":
        return {"numbers": list(range(MAX_ARRAY + 500))}
    return {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "write",
            "gen_ai.tool.call.arguments": BIG_ARGS, "gen_ai.tool.call.result": PLAIN}


def _received(send: Callable[[TraceService], None], harness: str | None = None) -> tuple[list[Event], list[str]]:
    async def main() -> tuple[list[Event], list[str]]:
        events: list[Event] = []
        logs: list[str] = []
        service = TraceService()
        await service.start(ServiceContext(Variant(harness=harness, traces="otlp"), "case v #0", None,
                                           logs.append, events.append))
        if harness is None:
            await asyncio.to_thread(send, service)
        else:
            send(service)  # in this task: the trial's context
        await service.settle()
        await service.stop()
        return events, logs

    return asyncio.run(main())


def _sdk_export(service: TraceService) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(
        endpoint=service.env()["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"])))
    for name in NAMES:
        with provider.get_tracer("t").start_as_current_span(name, attributes=_attributes(name)):
            pass
    provider.shutdown()


def _in_process(_service: TraceService) -> None:
    from opentelemetry import trace

    for name in NAMES:
        with trace.get_tracer("t").start_as_current_span(name, attributes=_attributes(name)):
            pass


def _json_export(service: TraceService) -> None:
    def value(v: Any) -> dict[str, Any]:
        if isinstance(v, list):
            return {"arrayValue": {"values": [value(x) for x in v]}}
        return {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}

    spans = [{"traceId": "ab" * 16, "spanId": f"{i:016x}", "name": name,
              "attributes": [{"key": k, "value": value(v)} for k, v in _attributes(name).items()]}
             for i, name in enumerate(NAMES, 1)]
    body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).encode()
    request = urllib.request.Request(service.env()["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"], data=body,
                                     headers={"Content-Type": "application/json"})
    assert urllib.request.urlopen(request).status == 200


def _check(events: list[Event], logs: list[str]) -> None:
    called = [e for e in events if e.type == "tool.called"]
    results = [e for e in events if e.type == "tool.result"]
    assert len(called) == 2
    assert called[0].data["input"] == json.loads(BIG_ARGS)  # parsed from the whole text
    output = results[0].data["output"]
    assert output.startswith("y" * MAX_STRING) and output.endswith("… [10 more]")
    cut = [line for line in logs if "was cut to the receiver's limits" in line]
    assert len(cut) == 1, logs  # once per trial
    assert "'execute_tool write'" in cut[0] and "'gen_ai.tool.call.result'" in cut[0]
    [plain] = [e for e in events if e.type == "span"]
    assert plain.data["attributes"]["numbers"] == list(range(MAX_ARRAY))


def test_limits_over_otlp_protobuf_from_the_sdks_exporter() -> None:
    _check(*_received(_sdk_export))


def test_limits_over_otlp_json() -> None:
    _check(*_received(_json_export))


def test_limits_of_a_python_agents_spans_in_this_process() -> None:
    events, logs = _received(_in_process, harness="python:agents.x:agent")
    _check(events, logs)


def _kvlist_request(keys: int) -> bytes:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue, KeyValueList

    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = b"\xab" * 16, b"\x01" * 8, "s"
    inner = KeyValueList(values=[KeyValue(key=f"k{i}", value=AnyValue(int_value=i)) for i in range(keys)])
    big = list(range(MAX_ARRAY + 7))
    span.attributes.append(KeyValue(key="map", value=AnyValue(kvlist_value=inner)))
    span.attributes.append(KeyValue(key="arr", value=AnyValue(array_value={"values": [{"int_value": i} for i in big]})))
    return request.SerializeToString()


def test_protobuf_maps_and_arrays_keep_what_json_ones_keep() -> None:
    def send(service: TraceService) -> None:
        request = urllib.request.Request(service.env()["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"],
                                         data=_kvlist_request(MAX_ATTRIBUTES + 44),
                                         headers={"Content-Type": "application/x-protobuf"})
        assert urllib.request.urlopen(request).status == 200

    events, logs = _received(send)
    [span] = events
    assert list(span.data["attributes"]["map"]) == [f"k{i}" for i in range(MAX_ATTRIBUTES)]
    assert span.data["attributes"]["arr"] == list(range(MAX_ARRAY))
    assert any("attribute 'map' was cut" in line for line in logs), logs


def test_spans_refused_past_the_cap_or_after_the_checks_leave_nothing_behind(monkeypatch: Any) -> None:
    """The span cap bounds memory: a span not kept (past MAX_SPANS, or late) is not remembered
    for deduplication either; a kept span resent is still kept once."""
    from anpord.traces import _service

    monkeypatch.setattr(_service, "MAX_SPANS", 3)
    remembered: list[int] = []

    def post(service: TraceService, first: int, count: int) -> None:
        spans = [{"traceId": "ab" * 16, "spanId": f"{i:016x}", "name": f"s{i}"} for i in range(first, first + count)]
        request = urllib.request.Request(service.env()["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"],
                                         data=json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).encode(),
                                         headers={"Content-Type": "application/json"})
        assert urllib.request.urlopen(request).status == 200

    def send(service: TraceService) -> None:
        post(service, 0, 2)
        post(service, 0, 2)  # a retry: kept once
        for batch in range(5):
            post(service, 2 + batch * 1000, 1000)
        remembered.append(len(service._seen))

    events, logs = _received(send)
    assert [e.data["name"] for e in events] == ["s0", "s1", "s2"]
    assert remembered == [3]
    assert "traces: 4999 span(s) past the trial's 3 not kept" in logs
