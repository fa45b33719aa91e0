"""The mock service: one trial's mocks, started on the per-trial service seam (runner/_services).

Each HTTP mock is a server on ``127.0.0.1``; CLI and MCP mocks share one relay port, which the
programs it writes into the trial's state folder (read-only inside the sandbox) connect to
(``_relay``). Where the sandbox closes the network, every port also listens on a unix socket
bridged in, so a trial reaches its own mocks and nothing else. Every call is a ``mock.called``
event (MCP calls also ``tool.called``/``tool.result`` named ``<server>.<tool>``).

The servers answer on the trial's loop; a connection that loop leaves waiting (an ``async def``
agent holding it with a blocking call to its mock) is answered on the rescue loop
(``traces/_rescue``), whose records are handed back to the trial's loop in order.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import shlex
import shutil
import tempfile
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import exception_line
from ..events import Event
from ..expect import match_detail
from ..traces._http import MAX_HEADERS, Reply, serve_connection
from ..traces._listen import Listeners
from ..traces._rescue import on_rescue_loop
from ._calls import call_user
from ._declare import MOCK_CALLED, CliMock, HttpMock, McpMock, Mock, env_name
from ._http_mock import answer_http
from ._mcp import MAX_LINE, serve_mcp
from ._relay import RELAY_SOURCE

if TYPE_CHECKING:
    from .._service_protocol import ServiceContext

__all__ = ["MockService", "MockHandle", "MOCK_CALLED", "env_name"]

STDIN_KEPT = 64 * 1024


@dataclass
class MockHandle:
    """A running mock as a Python agent sees it (``turn.mocks[name]``): ``url`` for an HTTP
    mock, ``mcp_server`` (an ``mcpServers`` entry: command and args) for an MCP mock, ``path``
    (the program) for a CLI mock."""

    name: str
    kind: str
    url: str | None = None
    mcp_server: dict[str, Any] | None = None
    path: str | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)


class MockService:
    name = "mocks"

    def __init__(self, mocks: tuple[Mock, ...]):
        self.mocks = mocks
        self.handles: dict[str, MockHandle] = {}
        self._ctx: ServiceContext | None = None
        self._home: asyncio.AbstractEventLoop | None = None  # the trial's loop: records go there
        self._listeners: Listeners | None = None
        self._folder: Path | None = None
        self._own_folder = False
        self._env: dict[str, str] = {}
        self._open = True
        self._serving: set[asyncio.Task[Any]] = set()  # connections being answered
        self.needs_sandbox = any(isinstance(m, CliMock) for m in mocks)

    # -- the TrialService protocol ------------------------------------------------------------

    async def start(self, ctx: ServiceContext) -> None:
        self._ctx = ctx
        self._home = asyncio.get_running_loop()
        self._listeners = Listeners(ctx.sandbox, folder=self._files, limit=max(MAX_HEADERS, MAX_LINE), rescue=True)
        relay_port = 0
        for mock in self.mocks:
            if isinstance(mock, HttpMock):
                port = await self._listeners.listen(functools.partial(self._http, mock), f"http-{mock.name}")
                url = f"http://127.0.0.1:{port}"
                self.handles[mock.name] = MockHandle(mock.name, "http", url=url)
                self._env[env_name(mock.name)] = url
            elif not relay_port:
                relay_port = await self._listeners.listen(self._relay, "relay")
        if relay_port:
            await self._write_programs(relay_port)

    def _files(self) -> Path:
        """The host folder for the mocks' sockets (and programs), made on first use (an HTTP
        mock on a shared loopback needs none): in the sandbox's state folder where that is a
        host folder, else a temporary one."""
        if self._folder is None:
            sandbox = self._ctx.sandbox if self._ctx is not None else None
            if sandbox is not None and sandbox.host_paths:
                self._folder = sandbox.state_dir / "mocks"
                self._folder.mkdir(exist_ok=True)
            else:
                self._folder = Path(tempfile.mkdtemp(prefix="anpord-mocks-"))
                self._own_folder = True
        return self._folder

    async def _write_programs(self, port: int) -> None:
        """The relay and each CLI mock's program, and the MCP servers' file, in the sandbox's
        state folder (read-only for its programs): written in place where that is a host folder,
        else written here and copied in at once."""
        from ..sandboxes._bridge import interpreter

        assert self._ctx is not None
        sandbox = self._ctx.sandbox
        staging = inside = self._files()
        if sandbox is not None and not sandbox.host_paths:
            staging, inside = inside / "files", sandbox.state_dir / "mocks"
            staging.mkdir()
        python, _ = interpreter()
        (staging / "relay.py").write_text(RELAY_SOURCE, encoding="utf-8")
        (staging / "relay.py").chmod(0o644)
        # How long a CLI call waits for its answer: the trial's time (see _relay's "no answer").
        wait = f"{self._ctx.timeout:g}" if self._ctx.timeout else "600"
        base = [python, "-I", "-S", str(inside / "relay.py"), str(port), wait]
        servers: dict[str, Any] = {}
        bin_dir = inside / "bin"
        for mock in self.mocks:
            if isinstance(mock, CliMock):
                (staging / "bin").mkdir(exist_ok=True)
                program = staging / "bin" / mock.name
                program.write_text("#!/bin/sh\nexec " + shlex.join([*base, "cli", mock.name]) + ' "$@"\n',
                                   encoding="utf-8")
                program.chmod(0o755)
                self.handles[mock.name] = MockHandle(mock.name, "cli", path=str(bin_dir / mock.name))
            elif isinstance(mock, McpMock):
                entry = {"command": python, "args": [*base[1:], "mcp", mock.name]}
                servers[mock.name] = entry
                self.handles[mock.name] = MockHandle(mock.name, "mcp", mcp_server=dict(entry))
        if (staging / "bin").exists():
            path = sandbox.environment().get("PATH") if sandbox is not None else os.environ.get("PATH")
            self._env["PATH"] = f"{bin_dir}:{path or '/usr/local/bin:/usr/bin:/bin'}"
        if servers:
            config = staging / "mcp.json"
            config.write_text(json.dumps({"mcpServers": servers}, indent=2), encoding="utf-8")
            config.chmod(0o644)
            self._env["ANPORD_MCP_CONFIG"] = str(inside / "mcp.json")
        if staging != inside:
            assert sandbox is not None
            await sandbox.copy_in(staging, inside)

    def env(self) -> dict[str, str]:
        return dict(self._env)

    async def settle(self) -> None:
        if self._listeners is not None and self._listeners.rescued:
            # What was answered on the rescue loop was handed back ahead of this round trip's end.
            await on_rescue_loop(asyncio.sleep(0))
        await asyncio.sleep(0)

    def seal(self) -> None:
        self._open = False

    async def stop(self) -> None:
        self._open = False
        if self._listeners is not None:
            self._listeners.close()
        for task in list(self._serving):
            # An answer still waiting (a delay, a function still running) ends with the trial.
            if task.get_loop() is self._home:
                task.cancel()
            else:  # a connection rescued from a held loop (Listeners.close cancels those too)
                task.get_loop().call_soon_threadsafe(task.cancel)
        if self._own_folder and self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)

    # -- recording ------------------------------------------------------------------------------

    def _record(self, type_: str, data: dict[str, Any]) -> None:
        if self._home is None or asyncio.get_running_loop() is self._home:
            self._deliver(type_, data)
        else:  # answered on the rescue loop: recorded on the trial's, after what came before
            self._at_home(self._deliver, type_, data)

    def _at_home(self, fn: Callable[..., None], *args: Any) -> None:
        """``fn(*args)`` on the trial's loop, from another thread's."""
        assert self._home is not None
        try:
            self._home.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # the trial's loop has closed: the trial is long over
            pass

    def _deliver(self, type_: str, data: dict[str, Any]) -> None:
        ctx = self._ctx
        if ctx is None or not self._open:
            return
        if type_ == MOCK_CALLED:
            handle = self.handles.get(data["mock"])
            if handle is not None:
                handle.calls.append(data)
            if data.get("error"):
                ctx.log(f"mock {data['mock']}: {data['error']}")
        ctx.record(Event(type_, data))

    # -- serving ----------------------------------------------------------------------------------

    async def _http(self, mock: HttpMock, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async def handle(request: Any) -> Reply:
            reply, call = await answer_http(mock, request)
            self._record(MOCK_CALLED, call)
            return reply

        await self._serve(serve_connection(reader, writer, handle, lambda reply: None))

    async def _serve(self, answering: Coroutine[Any, Any, None]) -> None:
        """Run one connection's handler, which ``stop`` cancels: a connection's task ends
        quietly then, its cancellation no error for the stream server to report."""
        task = asyncio.current_task()
        assert task is not None
        self._serving.add(task)
        try:
            await answering
        except asyncio.CancelledError:
            pass
        finally:
            self._serving.discard(task)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await self._serve(self._relayed(reader, writer))

    async def _relayed(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = json.loads(await reader.readuntil(b"\n"))
            mock = next((m for m in self.mocks if m.name == head.get("mock") and m.kind == head.get("kind")), None)
            if isinstance(mock, CliMock):
                writer.write(json.dumps(await self._cli(mock, head)).encode() + b"\n")
                await writer.drain()
            elif isinstance(mock, McpMock):
                await serve_mcp(mock, reader, writer, self._record)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ValueError, AttributeError):
            pass
        except Exception as exc:  # noqa: BLE001 - a fault of one call never ends the trial
            if self._ctx is not None:
                message = f"mocks: relay failed: {exception_line(exc)}"
                if asyncio.get_running_loop() is self._home:
                    self._ctx.log(message)
                else:
                    self._at_home(self._ctx.log, message)
        finally:
            writer.close()

    async def _cli(self, mock: CliMock, head: dict[str, Any]) -> dict[str, Any]:
        argv = [str(a) for a in head.get("argv") or []]
        # In a thread: an argv predicate is the user's function, and may block.
        answer, matched = await call_user(_cli_answer, mock, argv)
        out = {"stdout": answer.get("stdout", ""), "stderr": answer.get("stderr", ""),
               "exit_code": answer.get("exit_code", 0)}
        self._record(MOCK_CALLED, {
            "mock": mock.name, "kind": "cli", "argv": argv, "stdin": str(head.get("stdin", ""))[:STDIN_KEPT],
            "cwd": head.get("cwd"), "exit_code": out["exit_code"], "stdout": out["stdout"][:STDIN_KEPT],
            "error": None if matched or mock.default_given
            else f"no mocked response for {shlex.join([mock.name, *argv])}",
        })
        return out


def _cli_answer(mock: CliMock, argv: list[str]) -> tuple[Mapping[str, Any], bool]:
    """The response whose argv matches (whether one did), else the mock's default."""
    for response in mock.responses:
        wanted = response.get("argv")
        if wanted is None or match_detail(wanted, argv).ok:
            return response, True
    return mock.default, False
