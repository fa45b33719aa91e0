"""Bad input to a trial's receiver: malformed exports get a 400 and a line in the trial's log, and
the trial is judged on what did arrive; spans naming another trial are refused; spans arriving
once the trial's checks have run are not kept, and the log says so."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from project_support import assert_passed, eval_file

from anpord.authoring import Variant
from anpord.events import Event
from anpord.runner._services import ServiceContext
from anpord.traces import TraceService

# A stdlib-only exporter that misbehaves on purpose, then sends one good span; its answer is the
# HTTP statuses it got, in order.
HOSTILE = r'''
import gzip, http.client, json, os, urllib.parse

url = urllib.parse.urlsplit(os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"])
mine = dict(kv.split("=", 1) for kv in os.environ["OTEL_RESOURCE_ATTRIBUTES"].split(","))

def post(body, ctype="application/json", headers=None, send_body=True):
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    conn.putrequest("POST", url.path)
    conn.putheader("Content-Type", ctype)
    for k, v in (headers or {}).items():
        conn.putheader(k, v)
    if "Content-Length" not in (headers or {}):
        conn.putheader("Content-Length", str(len(body)))
    conn.endheaders()
    if send_body:
        conn.send(body)
    status = conn.getresponse().status
    conn.close()
    return status

def export(trial, name, attrs, depth=0):
    value = {"stringValue": "leaf"}
    for _ in range(depth):
        value = {"kvlistValue": {"values": [{"key": "k", "value": value}]}}
    attributes = [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()]
    if depth:
        attributes.append({"key": "deep", "value": value})
    return json.dumps({"resourceSpans": [{
        "resource": {"attributes": [{"key": "anpord.trial.id", "value": {"stringValue": trial}}]},
        "scopeSpans": [{"scope": {"name": "hostile"}, "spans": [{
            "traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b17%d" % depth if depth < 10 else "eee19b7ec3c1b174",
            "name": name, "kind": 1, "startTimeUnixNano": "1700000000000000000",
            "endTimeUnixNano": "1700000000500000000", "attributes": attributes}]}]}]}).encode()

trial = mine["anpord.trial.id"]
statuses = [
    post(b"\xff\xfe\xfd not protobuf", "application/x-protobuf"),
    post(b"hello", "text/plain"),
    post(b"", headers={"Content-Length": str(64 << 20)}, send_body=False),
    post(gzip.compress(b"0" * (40 << 20)), headers={"Content-Encoding": "gzip"}),
    post(export(trial, "deep", {}, depth=40)),
    post(b'{"resourceSpans": [' * 5000),
    post(export("another-trial", "execute_tool stolen", {"gen_ai.operation.name": "execute_tool"})),
    post(export(trial, "execute_tool good_tool", {"gen_ai.operation.name": "execute_tool",
                                                 "gen_ai.tool.call.arguments": '{"x": 1}'})),
]
print("statuses", " ".join(map(str, statuses)))
'''


@pytest.mark.parametrize("sandbox", ["local", "bwrap"])
def test_malformed_exports_get_400_and_the_trial_is_judged_on_what_arrived(
        make_project: Any, tmp_path: Path, sandbox: str) -> None:
    agents = tmp_path / "hostile"
    agents.mkdir()
    (agents / "hostile.py").write_text(HOSTILE)
    python = "python3" if sandbox == "bwrap" else sys.executable
    harness = f"command:{python} {agents / 'hostile.py'}"
    config = ("from anpord import Variant, define_eval_config\n"
              "config = define_eval_config(timeout=60, variants=[Variant(name='hostile', traces='otlp', "
              f"sandbox={sandbox!r}, harness={harness!r}, "
              f"mounts=[{str(agents)!r}])])\n")
    project = make_project({"evals/hostile.eval.py": eval_file('''
        @define_eval
        async def test(t):
            await t.send("go")
            t.check(t.reply, equals("statuses 400 400 400 400 400 400 400 200"))
            t.called_tool("good_tool", input={"x": 1})
            t.not_called_tool("stolen")
            t.check("end", equals("end")).label("reached the end")
    ''')}, config=config)
    run = project.run(timeout=120)
    assert run.code == 0, run.output
    assert_passed(run, "hostile")
    logs = "\n".join(run.trial("hostile")["logs"])
    for said in ("not an OTLP protobuf trace export", "Content-Type 'text/plain' is not OTLP/HTTP",
                 "the request body is over", "once decompressed", "nests deeper than 16 levels",
                 "nests deeper than this receiver reads", "name another trial (anpord.trial.id): refused"):
        assert f"traces: refused an export: " in logs and said in logs, (said, logs)


def test_spans_after_the_checks_ran_are_not_kept_and_the_log_says_so() -> None:
    """The real SDK's OTLP/HTTP exporter against one receiver: before and after the seal."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    async def main() -> tuple[list[Event], list[str]]:
        events: list[Event] = []
        logs: list[str] = []
        service = TraceService()
        await service.start(ServiceContext(Variant(traces="otlp"), "case v #0", None, logs.append, events.append))
        env = service.env()
        provider = TracerProvider(resource=Resource.create(
            dict(kv.split("=", 1) for kv in env["OTEL_RESOURCE_ATTRIBUTES"].split(","))))
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(
            endpoint=env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"])))
        tracer = provider.get_tracer("late")

        def span(name: str) -> None:
            with tracer.start_as_current_span(name):
                pass

        await asyncio.to_thread(span, "in time")
        await service.settle()
        service.seal()
        await asyncio.to_thread(span, "late")
        await service.stop()
        provider.shutdown()
        return events, logs

    events, logs = asyncio.run(main())
    assert [e.data["name"] for e in events] == ["in time"]
    assert "traces: 1 span(s) arrived after the trial's checks ran: not kept" in logs


def test_a_span_of_another_trial_among_this_ones_is_refused_alone() -> None:
    """A request holding both: 200 with a partial success naming the refused spans."""
    import urllib.request

    async def main() -> tuple[list[Event], list[str], dict[str, Any]]:
        events: list[Event] = []
        logs: list[str] = []
        service = TraceService()
        await service.start(ServiceContext(Variant(traces="otlp"), "case v #0", None, logs.append, events.append))

        def resource(trial: str, name: str, span_id: str) -> dict[str, Any]:
            return {"resource": {"attributes": [{"key": "anpord.trial.id", "value": {"stringValue": trial}}]},
                    "scopeSpans": [{"spans": [{"traceId": "ab" * 16, "spanId": span_id, "name": name}]}]}

        body = json.dumps({"resourceSpans": [resource(service.trial_id, "mine", "01" * 8),
                                             resource("someone-else", "theirs", "02" * 8)]}).encode()
        request = urllib.request.Request(service.env()["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"], data=body,
                                         headers={"Content-Type": "application/json"})
        reply = await asyncio.to_thread(lambda: json.loads(urllib.request.urlopen(request).read()))
        await service.stop()
        return events, logs, reply

    events, logs, reply = asyncio.run(main())
    assert [e.data["name"] for e in events] == ["mine"]
    assert reply["partialSuccess"]["rejectedSpans"] == "1"
    assert any("1 span(s) name another trial" in line for line in logs)


def test_metrics_and_logs_sent_to_the_same_endpoint_are_taken_and_dropped() -> None:
    import urllib.request

    async def main() -> tuple[list[Event], list[str], list[int]]:
        events: list[Event] = []
        logs: list[str] = []
        service = TraceService()
        await service.start(ServiceContext(Variant(traces="otlp"), "case v #0", None, logs.append, events.append))
        base = service.env()["OTEL_EXPORTER_OTLP_ENDPOINT"]

        def post(path: str) -> int:
            request = urllib.request.Request(base + path, data=b"{}", headers={"Content-Type": "application/json"})
            try:
                return urllib.request.urlopen(request).status
            except urllib.error.HTTPError as exc:
                return exc.code

        statuses = [await asyncio.to_thread(post, p) for p in ("/v1/metrics", "/v1/logs", "/v1/logs", "/nope")]
        await service.stop()
        return events, logs, statuses

    events, logs, statuses = asyncio.run(main())
    assert statuses == [200, 200, 200, 404] and events == []
    assert logs == ["traces: /v1/metrics exports are taken but not kept (traces only)"]


def test_the_http_agents_receiver_refuses_spans_of_no_running_trial() -> None:
    """The receiver on an agent server's export port routes by trace id: a trace no trial owns is
    refused, the trial's own is taken, and the port is let go when the last trial ends."""
    import socket
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    def export(trace_id: str) -> bytes:
        return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
            {"traceId": trace_id, "spanId": "03" * 8, "name": "execute_tool t",
             "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}}]}]}]}]}).encode()

    def post(body: bytes) -> int:
        request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/traces", data=body,
                                         headers={"Content-Type": "application/json"})
        try:
            return urllib.request.urlopen(request).status
        except urllib.error.HTTPError as exc:
            return exc.code

    async def main() -> tuple[list[Event], list[str], list[int], bool]:
        events: list[Event] = []
        logs: list[str] = []
        service = TraceService()
        variant = Variant(harness="http://127.0.0.1:1", traces="otlp", options={"traces_port": port})
        await service.start(ServiceContext(variant, "case v #0", None, logs.append, events.append))
        statuses = [await asyncio.to_thread(post, export("cd" * 16)),
                    await asyncio.to_thread(post, export(service.trace_id))]
        await service.stop()
        with socket.socket() as s:  # nothing listens there any more (closed connections may linger)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", port))
            s.listen()
        return events, logs, statuses, True

    events, logs, statuses, _ = asyncio.run(main())
    assert statuses == [400, 200]
    assert [e.type for e in events] == ["tool.called", "tool.result"]
    assert any("belong to no running trial's trace: refused" in line for line in logs), logs


def test_spans_past_the_trials_limit_are_counted_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """An exporter sending without end: the trial keeps its first MAX_SPANS and says how many more."""
    import urllib.request

    from anpord.traces import _service

    monkeypatch.setattr(_service, "MAX_SPANS", 3)

    async def main() -> tuple[list[Event], list[str]]:
        events: list[Event] = []
        logs: list[str] = []
        service = TraceService()
        await service.start(ServiceContext(Variant(traces="otlp"), "case v #0", None, logs.append, events.append))
        url = service.env()["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
        for batch in range(2):
            spans = [{"traceId": "ab" * 16, "spanId": f"{batch:02x}{i:014x}", "name": f"s{batch}.{i}"}
                     for i in range(2)]
            body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).encode()
            request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
            status = await asyncio.to_thread(lambda: urllib.request.urlopen(request).status)
            assert status == 200
        await service.stop()
        return events, logs

    events, logs = asyncio.run(main())
    assert [e.data["name"] for e in events] == ["s0.0", "s0.1", "s1.0"]
    assert "traces: 1 span(s) past the trial's 3 not kept" in logs


def test_a_python_agents_spans_past_the_limit_are_counted_not_held(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spans made in this process are held until the trial records them in one batch: an agent
    ending spans without end holds no more than MAX_SPANS, kept in the order they ended."""
    from opentelemetry import trace

    from anpord.traces import _service

    monkeypatch.setattr(_service, "MAX_SPANS", 3)

    async def main() -> tuple[list[Event], list[int], list[str]]:
        events: list[Event] = []
        batches: list[int] = []
        logs: list[str] = []
        pending: list[Any] = []

        def record_later(produce: Any) -> None:  # as the trial's state does: recorded later
            pending.append(produce)

        service = TraceService()
        await service.start(ServiceContext(Variant(harness="python:agents.x:agent", traces="otlp"),
                                           "case v #0", None, logs.append, events.append,
                                           record_later=record_later))
        tracer = trace.get_tracer("held")
        for i in range(5):
            with tracer.start_as_current_span(f"s{i}"):
                pass
        assert not events  # held, not read yet
        for produce in pending:
            made = produce()
            batches.append(len(made))
            events.extend(made)
        await service.stop()
        return events, batches, logs

    events, batches, logs = asyncio.run(main())
    assert [e.data["name"] for e in events] == ["s0", "s1", "s2"]
    assert batches == [3]
    assert "traces: 2 span(s) past the trial's 3 not kept" in logs
