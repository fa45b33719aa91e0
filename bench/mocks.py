"""Mocks (``anpord.mocks``): what one trial's mocks cost.

    python bench/mocks.py [--trials 1000] [--concurrency 100] [--setups 2000] [--repeat 3]
                          [--only setup|relay|run|ports]

Figures (printed, not asserted):

1. **HTTP mock set-up per trial**: ``MockService`` start + env + stop with one ``http_mock``, on
   loopback TCP, timed ``--setups`` times in one event loop (mean, p50, p99). Target: ≤ 5 ms.
2. **Relay start**: an MCP mock's server process as an MCP client starts it (the command from
   ``ANPORD_MCP_CONFIG``): spawn → first answer (a ``ping``) → exit, and a CLI mock's program run
   to its exit, each timed 50 times (median).
3. **A run**: ``--trials`` trials of a Python agent at ``--concurrency``, each making one HTTP
   request to its trial's mock, vs the same run without mocks, where the agent makes the same
   request to one server in the same process that every trial shares (what the mock costs is
   its own server per trial and the records, not the request). Target: ≤ 1.3×.

4. **A mock's port after many trials** (``--only ports``): each trial leaves a TIME_WAIT on its
   mock's port (the mock closes first, answering ``Connection: close``). A listening socket on
   port 0 as the kernel picks it (``bind`` to 0), as mocks had before, against one from
   ``loopback_listener`` (the ephemeral range in turn), timed 200 times after every 2,500 more
   TIME_WAITs (on ports the kernel picked), up to 12,500.

Each run is a fresh child process, so one scenario's imports and caches never help another; the
two runs of the ratio alternate ``--repeat`` times and each side's fastest counts (``_trials``).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from typing import Any

from _trials import arguments, header, paired, project, run_project, service_context, spawn, timings_ms

TARGET_SETUP_MS = 5.0
TARGET_RATIO = 1.3

PY_AGENT = '''
import asyncio

_shared = None  # without mocks: the same request, to one server shared by every trial


async def _answer(reader, writer):
    await reader.readuntil(b"\\r\\n\\r\\n")
    writer.write(b"HTTP/1.1 200 OK\\r\\nContent-Type: application/json\\r\\nContent-Length: 11\\r\\n"
                 b"Connection: close\\r\\n\\r\\n{\\"usd\\": 10}")
    await writer.drain()
    writer.close()


async def _server_url():
    global _shared
    if _shared is None:  # one start, however many trials ask at once
        _shared = asyncio.ensure_future(asyncio.start_server(_answer, "127.0.0.1", 0, backlog=1024))
    server = await _shared
    return f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"


async def agent(turn):
    pay = turn.mocks.get("pay")
    url = pay.url if pay is not None else await _server_url()
    host, port = url[len("http://"):].split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(b"GET /balance HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n")
    await writer.drain()
    reply = await reader.read()
    writer.close()
    assert b" 200 " in reply.split(b"\\r\\n", 1)[0], reply
    return turn.input
'''


def _child_run(mocked: bool, n: int, conc: int) -> dict[str, Any]:
    folder = project(
        "anpord-bench-mocks-", n=n, conc=conc, harness="python:bench_agents.agent:agent",
        imports="from anpord.mocks import http_mock" if mocked else "",
        extra=", mocks=[http_mock('pay', routes={'GET /balance': {'json': {'usd': 10}}})]" if mocked else "",
        files={"bench_agents/__init__.py": "", "bench_agents/agent.py": PY_AGENT},
    )
    result = run_project(folder, b'"mock.called"')
    result["mock_calls"] = result.pop("marked")
    return result


def _child_setup(setups: int) -> dict[str, Any]:
    from anpord.mocks import http_mock
    from anpord.mocks._service import MockService

    mocks = (http_mock("pay", routes={"GET /balance": {"json": {"usd": 10}}}),)

    async def main() -> dict[str, Any]:
        times = []
        for _ in range(setups):
            t0 = time.perf_counter()
            service = MockService(mocks)
            await service.start(service_context())
            service.env()
            await service.stop()
            times.append(time.perf_counter() - t0)
        return timings_ms(times)

    return asyncio.run(main())


def _child_relay(count: int) -> dict[str, Any]:
    from anpord.mocks import cli_mock, mcp_mock, mcp_tool
    from anpord.mocks._service import MockService

    mocks = (mcp_mock("crm", tools=[mcp_tool("lookup", result="gold")]),
             cli_mock("gh", responses=[{"stdout": "ok\n"}]))

    async def main() -> dict[str, Any]:
        service = MockService(mocks)
        await service.start(service_context())
        server = service.handles["crm"].mcp_server
        program = service.handles["gh"].path
        assert server is not None and program is not None
        mcp, cli = [], []
        ping = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}\n'
        for _ in range(count):
            t0 = time.perf_counter()
            proc = await asyncio.create_subprocess_exec(server["command"], *server["args"], stdin=asyncio.subprocess.PIPE,
                                                        stdout=asyncio.subprocess.PIPE)
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(ping)
            await proc.stdin.drain()
            await proc.stdout.readline()
            mcp.append(time.perf_counter() - t0)
            proc.stdin.close()
            await proc.wait()
            t0 = time.perf_counter()
            gh = await asyncio.create_subprocess_exec(program, "pr", "list", stdin=asyncio.subprocess.DEVNULL,
                                                      stdout=asyncio.subprocess.PIPE)
            await gh.communicate()
            cli.append(time.perf_counter() - t0)
        await service.stop()
        return {"mcp_ms": 1000 * statistics.median(mcp), "cli_ms": 1000 * statistics.median(cli)}

    return asyncio.run(main())


def _child_ports() -> dict[str, Any]:
    import socket

    from anpord.traces._listen import loopback_listener

    def closed_first(n: int) -> None:  # n connections closed by the listening side first
        for _ in range(n):  # on ports the kernel picks, as mocks before loopback_listener had
            listener = socket.socket()
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as asyncio's servers
            listener.bind(("127.0.0.1", 0))
            listener.listen(1)
            client = socket.create_connection(listener.getsockname())
            served, _ = listener.accept()
            served.close()
            client.recv(1)
            client.close()
            listener.close()

    def kernel() -> None:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", 0))
        s.listen(100)
        s.close()

    rows = []
    for step in range(6):
        if step:
            closed_first(2500)
        by_kernel = timings_ms([_timed(kernel) for _ in range(200)])
        in_turn = timings_ms([_timed(lambda: loopback_listener().close()) for _ in range(200)])
        rows.append({"time_wait": 2500 * step, "kernel_ms": by_kernel["mean_ms"], "in_turn_ms": in_turn["mean_ms"]})
    return {"rows": rows}


def _timed(fn: Any) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = arguments(__doc__ or "", ["setup", "relay", "run", "ports"])
    args = ap.parse_args()
    if args.child:
        kind, *rest = args.child
        if kind == "setup":
            print(json.dumps(_child_setup(int(rest[0]))))
        elif kind == "relay":
            print(json.dumps(_child_relay(int(rest[0]))))
        elif kind == "ports":
            print(json.dumps(_child_ports()))
        else:
            print(json.dumps(_child_run(rest[0] == "mocked", int(rest[1]), int(rest[2]))))
        return
    print(header("mocks", f"{args.trials} trials at C={args.concurrency}, fastest of {args.repeat}"))
    if args.only in (None, "setup"):
        s = spawn(__file__, "setup", str(args.setups))
        ok = "ok" if s["p50_ms"] <= TARGET_SETUP_MS else "OVER TARGET"
        print(f"HTTP mock set-up + stop per trial: mean {s['mean_ms']:.3f} ms, p50 {s['p50_ms']:.3f} ms, "
              f"p99 {s['p99_ms']:.3f} ms (target <= {TARGET_SETUP_MS} ms: {ok})")
    if args.only in (None, "relay"):
        r = spawn(__file__, "relay", "50")
        print(f"relay start (median of 50): MCP server spawn -> first answer {r['mcp_ms']:.1f} ms; "
              f"CLI mock program run to exit {r['cli_ms']:.1f} ms")
    if args.only in (None, "ports"):
        rows = spawn(__file__, "ports")["rows"]
        print("a mock's listening port, mean of 200 (TIME_WAITs left by earlier trials: bind to port 0 | in turn):")
        for row in rows:
            print(f"  {row['time_wait']:>6}: {row['kernel_ms']:.3f} ms | {row['in_turn_ms']:.3f} ms "
                  f"({row['kernel_ms'] / row['in_turn_ms']:.1f}x)")
    if args.only in (None, "run"):
        common = [str(args.trials), str(args.concurrency)]
        plain, mocked = paired(lambda: spawn(__file__, "run", "plain", *common),
                               lambda: spawn(__file__, "run", "mocked", *common), args.repeat)
        ratio = mocked["wall_s"] / plain["wall_s"]
        ok = "ok" if ratio <= TARGET_RATIO else "OVER TARGET"
        print(f"python agents: without mocks {plain['wall_s']:.2f} s ({plain['totals']['passed']} passed), "
              f"with an HTTP mock each {mocked['wall_s']:.2f} s ({mocked['totals']['passed']} passed, "
              f"{mocked['mock_calls']} calls recorded): {ratio:.2f}x (target <= {TARGET_RATIO}x: {ok})")


if __name__ == "__main__":
    main()
