"""Traced trials (``Variant(traces="otlp")``): what the per-trial receiver costs.

    python bench/traces.py [--trials 1000] [--spans 20] [--concurrency 100] [--setups 2000]
                           [--repeat 3] [--only setup|python|command]

Figures (printed, not asserted):

1. **Receiver set-up per trial**: ``TraceService`` start + env + stop, on loopback TCP, timed
   ``--setups`` times in one event loop (mean, p50, p99); and the unix socket a sandbox with its
   network closed adds (bind + serve + close). Target: ≤ 3 ms.
2. **Python agents**: ``--trials`` trials at ``--concurrency``, each agent making ``--spans`` spans
   with the OpenTelemetry API in-process (an agent span holding model and tool calls), run by the
   runner API with artifacts on; traced vs the same run without ``traces=``. Target: ≤ 1.3×.
   Both sides run the same agent module, which sets up the SDK's ``TracerProvider`` itself, as an
   instrumented agent does, and makes the same spans: the untraced side pays the SDK's own spans
   with no processor on them; the traced side adds anpord's span processor, each span's events
   (mapping, recording into the trial, writing to ``events.ndjson``) and the usage they add up.
   So the ratio is what turning ``traces="otlp"`` on costs an already instrumented agent's run,
   not what instrumenting the agent costs (the last line, an untraced run where nothing set up
   the SDK, shows that for scale).
3. **Command agents**: the same count of trials of a command agent (``python3 -I -S``, standard
   library only) that loads its HTTP client and its export of ``--spans`` spans (OTLP/protobuf)
   in every run, as an instrumented agent does, and POSTs the export to its trial's receiver when
   it has one; traced vs untraced, local sandbox. Target: ≤ 1.3×.
4. **HTTP agents**: the same count of trials of an HTTP agent, ``anpord serve`` of the Python
   agent above in a process of its own, whose spans continue each turn's ``traceparent``; traced,
   the server exports them with the SDK's ``BatchSpanProcessor`` and OTLP/HTTP exporter
   (``OTEL_BSP_SCHEDULE_DELAY=--bsp-delay`` ms) to anpord's receiver on a free port, and each turn
   waits until a span of its own has arrived; untraced, the same server makes the same spans with
   no exporter. The runner's wall and its own process's CPU (the server's is not counted), so the
   ratio holds the wait for the server's batches as well as the receiving. Target: ≤ 1.3×.

Each run is a fresh child process, so one scenario's imports and caches never help another; the
traced and untraced runs alternate ``--repeat`` times and each side's fastest counts (``_trials``).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _trials import arguments, header, paired, project, run_project, service_context, spawn, timings_ms

TARGET_SETUP_MS = 3.0
TARGET_RATIO = 1.3

PY_AGENT = '''
import json, os
from opentelemetry import trace

if os.environ.get("BENCH_SDK"):  # the agent sets up the SDK itself, as an instrumented agent does
    from opentelemetry.sdk.trace import TracerProvider
    trace.set_tracer_provider(TracerProvider())
    if os.environ.get("BENCH_EXPORT"):  # a served agent exporting to OTEL_EXPORTER_OTLP_*
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        trace.get_tracer_provider().add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))

tracer = trace.get_tracer("bench")
SPANS = {spans}


async def agent(turn):
    with tracer.start_as_current_span("invoke_agent bench", attributes={{"gen_ai.operation.name": "invoke_agent"}}):
        for i in range(SPANS - 1):
            if i % 3 == 0:
                attrs = {{"gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
                          "gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 2}}
                name = "chat m"
            elif i % 3 == 1:
                attrs = {{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup",
                          "gen_ai.tool.call.arguments": json.dumps({{"i": i}})}}
                name = "execute_tool lookup"
            else:
                attrs = {{"step": i}}
                name = "step"
            with tracer.start_as_current_span(name, attributes=attrs):
                pass
    return turn.input
'''

CMD_AGENT = '''
# An instrumented agent: its exporter is loaded and its spans made whether or not anyone listens
# (what the untraced run also pays); only the export itself needs an endpoint.
import http.client, os, sys, urllib.parse
with open(sys.argv[1], "rb") as f:
    body = f.read()
url = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
if url:
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    conn.request("POST", parts.path, body, {"Content-Type": "application/x-protobuf"})
    assert conn.getresponse().status == 200
print(os.environ.get("ANPORD_PROMPT", ""))
'''

def _export_body(spans: int) -> bytes:
    """One OTLP/protobuf export of ``spans`` spans (no trial attribute: a trial's receiver takes
    spans that name no trial)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import KeyValue

    req = ExportTraceServiceRequest()
    ss = req.resource_spans.add().scope_spans.add()
    root = os.urandom(8)
    trace_id = os.urandom(16)
    for i in range(spans):
        s = ss.spans.add()
        s.trace_id, s.span_id = trace_id, root if i == 0 else os.urandom(8)
        if i:
            s.parent_span_id = root
        s.name = "invoke_agent" if i == 0 else ("execute_tool lookup" if i % 2 else "chat m")
        s.start_time_unix_nano, s.end_time_unix_nano = 1_700_000_000_000_000_000, 1_700_000_000_100_000_000
        op = "invoke_agent" if i == 0 else ("execute_tool" if i % 2 else "chat")
        s.attributes.append(KeyValue(key="gen_ai.operation.name"))
        s.attributes[-1].value.string_value = op
        if op == "execute_tool":
            s.attributes.append(KeyValue(key="gen_ai.tool.call.arguments"))
            s.attributes[-1].value.string_value = json.dumps({"i": i})
    return req.SerializeToString()


def _child_run(kind: str, traced: bool, n: int, spans: int, conc: int, bsp_delay: int = 0) -> dict[str, Any]:
    options = ", traces='otlp'" if traced else ""
    if kind == "http":
        return _http_run(traced, n, spans, conc, bsp_delay)
    if kind == "python":
        files: dict[str, str | bytes] = {"bench_agents/__init__.py": "",
                                         "bench_agents/agent.py": PY_AGENT.format(spans=spans)}
        folder = project(f"anpord-bench-traces-{kind}-", n=n, conc=conc, options=options, files=files,
                         harness="python:bench_agents.agent:agent")
    else:
        python = shutil.which("python3") or sys.executable
        folder = project(f"anpord-bench-traces-{kind}-", n=n, conc=conc, options=options,
                         harness=f"command:{python} -I -S {{folder}}/agent.py {{folder}}/export.bin",
                         files={"agent.py": CMD_AGENT, "export.bin": _export_body(spans)})
    result = run_project(folder, b'"source":"trace"')
    result["traced_events"] = result.pop("marked")
    return result


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _http_run(traced: bool, n: int, spans: int, conc: int, bsp_delay: int) -> dict[str, Any]:
    """``anpord serve`` of ``PY_AGENT`` in its own process, driven through the HTTP harness."""
    import re
    import subprocess

    served = Path(tempfile.mkdtemp(prefix="anpord-bench-traces-served-"))
    (served / "bench_agents").mkdir()
    (served / "bench_agents" / "__init__.py").write_text("")
    (served / "bench_agents" / "agent.py").write_text(PY_AGENT.format(spans=spans))
    traces_port = _free_port()
    env = dict(os.environ, BENCH_SDK="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(served), os.environ.get("PYTHONPATH")])))
    if traced:
        env.update(BENCH_EXPORT="1", OTEL_BSP_SCHEDULE_DELAY=str(bsp_delay),
                   OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=f"http://127.0.0.1:{traces_port}/v1/traces")
    # A file, not a pipe: nothing drains the server's stderr while the run goes on.
    errors = open(served / "serve.err", "w+b")
    # Port 0: the server picks a free one and prints its URL once it listens.
    server = subprocess.Popen([sys.executable, "-m", "anpord", "serve", "bench_agents.agent:agent",
                               "--port", "0"], cwd=served, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=errors)
    try:
        assert server.stdout is not None
        match = re.search(r" at (http://\S+)", server.stdout.readline())
        if match is None:
            errors.seek(0)
            raise SystemExit(f"anpord serve did not start:\n{errors.read().decode()[-3000:]}")
        url = match.group(1)
        options = f", traces='otlp', options={{'traces_port': {traces_port}}}" if traced else ""
        folder = project("anpord-bench-traces-http-", n=n, conc=conc, options=options, harness=url)
        result = run_project(folder, b'"source":"trace"')
    finally:
        server.terminate()
        server.wait(10)
        errors.close()
        shutil.rmtree(served, ignore_errors=True)
    result["traced_events"] = result.pop("marked")
    return result


def _child_setup(setups: int) -> dict[str, Any]:
    from anpord.authoring import Variant
    from anpord.sandboxes._bridge import bind_unix
    from anpord.traces import TraceService

    async def main() -> dict[str, Any]:
        variant = Variant(traces="otlp")
        times, unix = [], []
        folder = Path(tempfile.mkdtemp(prefix="anpord-bench-sock-"))
        for i in range(setups):
            t0 = time.perf_counter()
            service = TraceService()
            await service.start(service_context(variant))
            service.env()
            await service.stop()
            times.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            path = folder / f"s{i}.sock"
            server = await asyncio.start_unix_server(lambda r, w: None, sock=bind_unix(path))
            server.close()
            path.unlink()
            unix.append(time.perf_counter() - t0)
        shutil.rmtree(folder, ignore_errors=True)
        return {**timings_ms(times), "unix_mean_ms": timings_ms(unix)["mean_ms"]}

    return asyncio.run(main())


def main() -> None:
    ap = arguments(__doc__ or "", ["setup", "python", "command", "http"])
    ap.add_argument("--spans", type=int, default=20)
    ap.add_argument("--bsp-delay", type=int, default=20,
                    help="the HTTP agent's OTEL_BSP_SCHEDULE_DELAY, in ms (default 20)")
    args = ap.parse_args()
    if args.child:
        kind, *rest = args.child
        if kind == "setup":
            print(json.dumps(_child_setup(int(rest[0]))))
        else:
            print(json.dumps(_child_run(kind, rest[0] == "traced", *map(int, rest[1:]))))
        return
    print(header("traces", f"{args.trials} trials x {args.spans} spans at C={args.concurrency}, "
                           f"fastest of {args.repeat}"))
    if args.only in (None, "setup"):
        s = spawn(__file__, "setup", str(args.setups))
        ok = "ok" if s["p50_ms"] <= TARGET_SETUP_MS else "OVER TARGET"
        print(f"receiver set-up + stop per trial: mean {s['mean_ms']:.3f} ms, p50 {s['p50_ms']:.3f} ms, "
              f"p99 {s['p99_ms']:.3f} ms (target <= {TARGET_SETUP_MS} ms: {ok}); "
              f"unix socket for a closed network adds {s['unix_mean_ms']:.3f} ms")
    for kind in ("python", "command", "http"):
        if args.only not in (None, kind):
            continue
        common = [str(args.trials), str(args.spans), str(args.concurrency)]
        if kind == "http":
            common.append(str(args.bsp_delay))
        sdk = {"BENCH_SDK": "1"}
        plain, traced = paired(lambda: spawn(__file__, kind, "plain", *common, env=sdk),
                               lambda: spawn(__file__, kind, "traced", *common, env=sdk), args.repeat)
        ratio = traced["wall_s"] / plain["wall_s"]
        ok = "ok" if ratio <= TARGET_RATIO else "OVER TARGET"
        passed = f"{plain['totals']['passed']}/{traced['totals']['passed']} passed"
        print(f"{kind} agents: untraced {plain['wall_s']:.2f} s, traced {traced['wall_s']:.2f} s ({passed}, "
              f"{traced['traced_events']} trace events recorded): {ratio:.2f}x (target <= {TARGET_RATIO}x: {ok})")
        print(f"  runner process CPU: untraced {plain['runner_cpu_s']:.2f} s, traced {traced['runner_cpu_s']:.2f} s "
              f"({traced['runner_cpu_s'] / plain['runner_cpu_s']:.2f}x; "
              f"{1000 * (traced['runner_cpu_s'] - plain['runner_cpu_s']) / args.trials:.2f} ms more per trial)")
        if kind == "python":
            # For scale: the same agent when nothing set up the SDK (the API's spans cost nothing).
            bare = spawn(__file__, kind, "plain", *common)
            print(f"  (untraced without the SDK set up at all: {bare['wall_s']:.2f} s; traced is "
                  f"{traced['wall_s'] / bare['wall_s']:.2f}x that: the SDK's own spans are most of it)")


if __name__ == "__main__":
    main()
