"""OTLP/protobuf decoding: whatever a span holds, its events are the ones the same span sent as
OTLP/JSON makes (the JSON decoder is the oracle), and protobuf's classes are imported while a
trial's agent starts, not by the first export on the event loop."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import textwrap
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from anpord.traces._decode import decode_json, decode_protobuf
from anpord.traces._map import span_events
from anpord.traces._spans import MAX_STRING

# An attribute value as a Python value tagged with its OTLP kind.
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
LEAVES = st.one_of(
    st.tuples(st.just("string"), TEXT | st.sampled_from(['{"city": "Oslo"}', "[1, 2]"])
              | st.integers(1, 3).map(lambda more: "y" * (MAX_STRING + more))),  # past the limit
    st.tuples(st.just("int"), st.integers(-(1 << 63), (1 << 63) - 1)),
    st.tuples(st.just("bool"), st.booleans()),
    st.tuples(st.just("double"), st.floats(allow_nan=False, allow_infinity=False)),
    st.tuples(st.just("bytes"), st.binary(max_size=6)),
)
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.one_of(
        st.tuples(st.just("array"), st.lists(inner, max_size=3)),
        st.tuples(st.just("kvlist"), st.lists(st.tuples(TEXT, inner), max_size=3)),
    ),
    max_leaves=6,
)
KEYS = st.sampled_from(["gen_ai.operation.name", "gen_ai.tool.name", "gen_ai.tool.call.arguments",
                        "gen_ai.tool.call.result", "gen_ai.request.model", "gen_ai.usage.input_tokens",
                        "gen_ai.usage.output_tokens", "step", "note"])
ATTRS = st.lists(st.tuples(KEYS, VALUES), max_size=6)
SPAN = st.fixed_dictionaries({
    "name": st.sampled_from(["chat m", "execute_tool lookup", "invoke_agent a", "step"]),
    "attrs": ATTRS,
    "status": st.sampled_from([0, 1, 2]),
    "message": st.sampled_from(["", "it broke"]),
    "events": st.lists(st.tuples(st.sampled_from(["exception", "log"]), ATTRS), max_size=2),
    "parent": st.booleans(),
})


def _json_value(kind: str, v: Any) -> dict[str, Any]:
    if kind == "string":
        return {"stringValue": v}
    if kind == "int":
        return {"intValue": str(v)}
    if kind == "bool":
        return {"boolValue": v}
    if kind == "double":
        return {"doubleValue": v}
    if kind == "bytes":
        return {"bytesValue": base64.b64encode(v).decode()}
    if kind == "array":
        return {"arrayValue": {"values": [_json_value(*x) for x in v]}}
    return {"kvlistValue": {"values": [{"key": k, "value": _json_value(*x)} for k, x in v]}}


def _pb_value(target: Any, kind: str, v: Any) -> None:
    if kind in ("string", "int", "bool", "double", "bytes"):
        setattr(target, f"{kind}_value", v)
    elif kind == "array":
        target.array_value.SetInParent()
        for x in v:
            _pb_value(target.array_value.values.add(), *x)
    else:
        target.kvlist_value.SetInParent()
        for k, x in v:
            kv = target.kvlist_value.values.add()
            kv.key = k
            _pb_value(kv.value, *x)


def _both(spans: list[dict[str, Any]]) -> tuple[bytes, bytes]:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    rs = request.resource_spans.add()
    kv = rs.resource.attributes.add()
    kv.key, kv.value.string_value = "service.name", "agent"
    ss = rs.scope_spans.add()
    ss.scope.name = "bench"
    out = []
    for i, s in enumerate(spans, 1):
        p = ss.spans.add()
        p.trace_id, p.span_id, p.name = b"\xab" * 16, i.to_bytes(8, "big"), s["name"]
        if s["parent"]:
            p.parent_span_id = b"\x00" * 7 + b"\x01"
        p.kind, p.start_time_unix_nano, p.end_time_unix_nano = 3, 1_700_000_000_000_000_000, 1_700_000_000_500_000_000
        p.status.code, p.status.message = s["status"], s["message"]
        for key, (kind, v) in s["attrs"]:
            a = p.attributes.add()
            a.key = key
            _pb_value(a.value, kind, v)
        for name, attrs in s["events"]:
            e = p.events.add()
            e.name = name
            for key, (kind, v) in attrs:
                a = e.attributes.add()
                a.key = key
                _pb_value(a.value, kind, v)
        out.append({
            "traceId": "ab" * 16, "spanId": f"{i:016x}", "name": s["name"], "kind": 3,
            **({"parentSpanId": f"{1:016x}"} if s["parent"] else {}),
            "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000000500000000",
            "status": {"code": s["status"], "message": s["message"]},
            "attributes": [{"key": k, "value": _json_value(*x)} for k, x in s["attrs"]],
            "events": [{"name": n, "attributes": [{"key": k, "value": _json_value(*x)} for k, x in a]}
                       for n, a in s["events"]],
        })
    doc = {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "agent"}}]},
                              "scopeSpans": [{"scope": {"name": "bench"}, "spans": out}]}]}
    return request.SerializeToString(), json.dumps(doc).encode()


def _events(batches: list[Any]) -> list[tuple[str, dict[str, Any], float]]:
    return [(e.type, e.data, e.ts) for _resource, spans in batches for span in spans for e in span_events(span)]


@settings(max_examples=300, deadline=None)
@given(st.lists(SPAN, min_size=1, max_size=4))
def test_a_protobuf_export_makes_the_events_its_json_twin_makes(spans: list[dict[str, Any]]) -> None:
    pb, js = _both(spans)
    from_pb, from_js = decode_protobuf(pb), decode_json(js)
    assert [r for r, _ in from_pb] == [r for r, _ in from_js] == [{"service.name": "agent"}]
    assert _events(from_pb) == _events(from_js)
    # And every span is read whole: the same attributes, status and clipping.
    for a, b in zip(from_pb[0][1], from_js[0][1]):
        assert (a.attributes, a.status, a.status_message, a.clipped) == (b.attributes, b.status, b.status_message, b.clipped)


def test_a_failed_spans_exception_over_protobuf_is_its_error() -> None:
    pb, _ = _both([{"name": "execute_tool search", "attrs": [], "status": 2, "message": "", "parent": False,
                    "events": [("log", []), ("exception", [("exception.type", ("string", "TimeoutError")),
                                                            ("exception.message", ("string", "slow"))])]}])
    _called, result = _events(decode_protobuf(pb))
    assert result[1]["status"] == "failed" and result[1]["error"] == "TimeoutError: slow"


def test_protobufs_classes_are_imported_as_a_command_agents_receiver_opens() -> None:
    """In a fresh interpreter: opening a command agent's receiver starts the import in a thread of
    its own, and with no export ever sent the classes are in once it ends."""
    script = textwrap.dedent("""
        import asyncio, sys, threading
        from anpord.authoring import Variant
        from anpord.runner._services import ServiceContext
        from anpord.traces import TraceService
        from anpord.traces import _decode

        PB2 = "opentelemetry.proto.collector.trace.v1.trace_service_pb2"

        async def main():
            assert PB2 not in sys.modules
            service = TraceService()
            await service.start(ServiceContext(Variant(harness="command:true", traces="otlp"), "c v #0",
                                               None, print, lambda e: None))
            warming = _decode._warming
            assert warming is not None and warming.name == "anpord-otlp-import"
            await asyncio.to_thread(warming.join, 30)
            await service.stop()
            print("imported" if PB2 in sys.modules else "not imported")

        asyncio.run(main())
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "imported"
