"""Running one agent program in a trial's sandbox and streaming its output into events.

Shared by every harness that runs a program per turn: the command harness (anpord's own line
protocol) and the coding-agent CLIs (each with its own JSON stream). The program's stdout lines go
to a ``StreamParser``; its stderr lines become ``log`` events. Output is capped so a program
printing megabytes cannot exhaust memory: past the caps it is still read (the program never
blocks on a full pipe) but dropped, and one note says how much. When the program exits, what it
left running is killed (as a PID namespace would), and a sandbox that could not start it at all
is told apart from the program failing.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..events import LOG, Event
from ..sandboxes._protocol import SandboxInstance
from ._protocol import Emit, TurnOutcome, TurnRequest
from ._stream import StreamParser

__all__ = [
    "EVENT_CAP",
    "LOG_CAP",
    "MAX_LINE",
    "ProgramExit",
    "ProgramRun",
    "ProgramSession",
    "read_lines",
]

MAX_LINE = 1 << 20  # a longer line is cut (and so cannot be an event)
LOG_CAP = 1 << 20  # bytes of log events (non-event stdout and stderr)
EVENT_CAP = 10_000  # events per program run


@dataclass(frozen=True)
class ProgramExit:
    """How a program run ended. ``setup_failure`` says why the sandbox could not start it at all
    (the program never ran); ``stdout_lines`` counts what it printed; ``stderr_tail`` is its last
    stderr lines, ``stderr_head`` its first ones (where a CLI names the cause before printing its
    help), for a one-line reason."""

    exit_code: int
    duration: float
    stdout_lines: int
    stderr_tail: str
    setup_failure: str | None = None
    stderr_head: str = ""


async def read_lines(
    stream: asyncio.StreamReader | None, on_line: Callable[[bytes, bool], None]
) -> None:
    """Call ``on_line(line, cut)`` for each line as it arrives; a line longer than ``MAX_LINE`` is
    delivered cut (``cut=True``) and the rest of it skipped."""
    if stream is None:
        return
    buf = bytearray()
    skipping = False  # inside the rest of a line already cut at MAX_LINE
    while chunk := await stream.read(1 << 16):
        buf += chunk
        start = 0
        while (nl := buf.find(b"\n", start)) >= 0:
            if not skipping:
                on_line(bytes(buf[start:nl]), False)
            skipping = False
            start = nl + 1
        del buf[:start]
        if len(buf) > MAX_LINE:
            if not skipping:
                on_line(bytes(buf[:MAX_LINE]), True)
            skipping = True
            buf.clear()
    if buf and not skipping:
        on_line(bytes(buf), False)


class ProgramRun:
    """One run of a program: start it in the sandbox, stream its output, wait for its exit.

    ``emit`` receives the events (within the caps); ``log`` receives the log lines for the trial's
    log and ``--verbose`` (stderr lines prefixed ``[stderr]``).
    """

    def __init__(
        self,
        sandbox: SandboxInstance,
        parser: StreamParser,
        emit: Emit,
        log: Callable[[str], None],
        chatter: Callable[[str], bool] | None = None,
    ):
        # chatter(line): a stderr line the program prints on every run (a debug trace) that is
        # not kept, only counted.
        self.chatter = chatter
        self._chatter_lines = 0
        self._stderr_head: list[str] = []
        self.sandbox = sandbox
        self.parser = parser
        self.emit = emit
        self.log = log
        self.proc: asyncio.subprocess.Process | None = None
        self.stdout_lines = 0
        self._log_bytes = 0
        self._dropped_log = 0
        self._events = 0
        self._dropped_events = 0
        self._stderr_tail: list[str] = []

    # -- output ------------------------------------------------------------------------------

    def _log_line(self, text: str, stream: str) -> None:
        size = len(text.encode("utf-8", "replace"))
        if self._log_bytes + size > LOG_CAP:
            self._dropped_log += size
            return
        self._log_bytes += size
        self.emit(Event(LOG, {"message": text, "stream": stream}))
        self.log(f"[stderr] {text}" if stream == "stderr" else text)

    def _deliver(self, event: Event) -> None:
        if event.type == LOG:
            self._log_line(str(event.data.get("message", "")), str(event.data.get("stream", "stdout")))
            return
        if self._events >= EVENT_CAP:
            self._dropped_events += 1
            return
        self._events += 1
        self.emit(event)

    def _on_stdout(self, raw: bytes, cut: bool) -> None:
        self.stdout_lines += 1
        line = raw.decode("utf-8", "replace").rstrip("\r")
        if cut:
            line += f" [… line cut at {MAX_LINE} bytes]"
        for event in self.parser.feed(line):
            self._deliver(event)

    def _on_stderr(self, raw: bytes, cut: bool) -> None:
        text = raw.decode("utf-8", "replace").rstrip("\r")
        if self.chatter is not None and self.chatter(text):
            self._chatter_lines += 1
            return
        if len(self._stderr_head) < 40:
            self._stderr_head.append(text)
        self._stderr_tail[:] = [*self._stderr_tail[-19:], text]
        self._log_line(text, "stderr")

    def _notes(self) -> None:
        def note(text: str) -> None:
            self.emit(Event(LOG, {"message": text, "stream": "anpord"}))

        if self._dropped_log:
            note(f"[{self._dropped_log} bytes of output not kept: log cap {LOG_CAP} bytes]")
        if self._dropped_events:
            note(f"[{self._dropped_events} events not kept: cap {EVENT_CAP} per run]")
        if self._chatter_lines:
            note(f"[{self._chatter_lines} debug lines on stderr not kept]")

    # -- the process -------------------------------------------------------------------------

    async def run(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: Path | None = None,
        *,
        stdin: Path | bytes | None = None,
        on_spawn: Callable[[asyncio.subprocess.Process], object] | None = None,
        expected_kill: Callable[[], bool] = lambda: False,
    ) -> ProgramExit:
        """Run to the program's exit. ``on_spawn`` is told as soon as it started (a cancel that
        arrived meanwhile kills it then); ``expected_kill`` says whether a kill was ours (a
        cancel, the session closing), so it is not mistaken for a sandbox failure. ``stdin`` is a
        host file for the program to read, or its bytes (else it reads an empty input)."""
        from ..sandboxes._proc import settle

        started = time.monotonic()
        proc = await self.sandbox.spawn(
            argv, env=env, cwd=cwd or self.sandbox.workspace, stdin=stdin
        )
        self.proc = proc
        if on_spawn is not None:
            result = on_spawn(proc)
            if asyncio.iscoroutine(result):
                await result
        readers = asyncio.gather(read_lines(proc.stdout, self._on_stdout), read_lines(proc.stderr, self._on_stderr))
        try:
            # When the program exits, what it left running ends too (as a PID namespace would).
            code, _ = await settle(
                proc, readers, lambda: self.sandbox.kill_tree(proc), lambda: self.sandbox.kill_tree_now(proc)
            )
        finally:
            self.proc = None
        self._notes()
        stderr = "\n".join(self._stderr_tail)
        failure = None if expected_kill() else await self.sandbox.setup_failure(proc, stderr)
        return ProgramExit(
            code, time.monotonic() - started, self.stdout_lines, stderr, failure,
            stderr_head="\n".join(self._stderr_head),
        )

    async def kill(self) -> None:
        proc = self.proc
        if proc is not None and proc.returncode is None:
            await self.sandbox.kill_tree(proc)


class ProgramSession:
    """A session whose turns each run one program in the sandbox: the state ``cancel`` and
    ``close`` share with the running turn. A subclass implements ``_turn`` and keeps the running
    program in ``_program``; it kills a program whose spawn returns after ``_cancel_requested``
    or ``_closing`` was set."""

    def __init__(self, sandbox: SandboxInstance, session_id: str):
        self.sandbox = sandbox
        self.session_id = session_id
        safe = re.sub(r"[^\w.-]", "_", session_id)[:80] or "session"
        # The session's files, outside the workdir: written through the sandbox's file methods,
        # which make the folder.
        self.dir = Path(sandbox.state_dir) / "sessions" / safe
        self._program: ProgramRun | None = None
        self._turn_running = False  # from run_turn's start: a cancel may come before the spawn
        self._cancel_requested = False
        self._closing = False  # a turn still running is killed: not a sandbox failure

    async def run_turn(self, request: TurnRequest, emit: Emit) -> TurnOutcome:
        self._cancel_requested = False
        self._turn_running = True
        try:
            return await self._turn(request, emit)
        finally:
            self._turn_running = False

    async def _turn(self, request: TurnRequest, emit: Emit) -> TurnOutcome:
        raise NotImplementedError

    async def cancel(self) -> bool:
        if not self._turn_running:
            return False
        self._cancel_requested = True
        if self._program is not None:
            await self._program.kill()
        return True  # not spawned yet: the subclass kills it as soon as its spawn returns

    async def close(self) -> None:
        self._closing = True
        if self._program is not None:
            await self._program.kill()
        if self.sandbox.host_paths:  # elsewhere they go with the sandbox, at the trial's end
            from ..workspace import remove_tree

            remove_tree(self.dir)
