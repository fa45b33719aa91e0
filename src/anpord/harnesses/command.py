"""The command harness (``"command:<shell command>"``): any program that speaks a small protocol.

Each turn runs the command under ``bash -c`` in the trial's workspace, inside its sandbox, with
stdin closed and the ``ANPORD_*`` variables set. Its stdout is read line by line as it arrives:
a JSON object with a string ``type`` is an event (data fields at the top level), anything else is
log. A program that prints no ``message.completed`` has its non-event stdout, stripped, taken as
the answer. Its exit code is recorded (a ``process.exited`` event), not judged — except 126/127
with nothing printed (the shell could not start it), which raises ``HarnessStartError`` (``void``).

Input requests: the program prints ``input.requested`` events and exits; the turn settles
``waiting``. Once the eval answers every open request, the command runs again for the same turn
with the answers in ``ANPORD_INPUT_RESPONSES_FILE``. The full protocol is docs/command-protocol.md.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..events import (
    INPUT_REQUESTED,
    INPUT_RESOLVED,
    LOG,
    MESSAGE_COMPLETED,
    TOOL_RESULT,
    Event,
    message_text,
)
from ._protocol import (
    Emit,
    HarnessContext,
    HarnessSpecError,
    HarnessStartError,
    TurnOutcome,
    TurnRequest,
)

__all__ = ["PROCESS_EXITED", "CommandHarness", "CommandSession", "resolve"]

# The custom event recording how the agent program ended: {command, exit_code, duration}.
PROCESS_EXITED = "process.exited"
# Output caps per run, so a program printing megabytes cannot exhaust memory. Past them output is
# still read (the program never blocks) but dropped, and one log event says how much.
MAX_LINE = 1 << 20  # a longer line is cut (and cannot be an event)
LOG_CAP = 1 << 20  # bytes of log events (non-event stdout and stderr)
ANSWER_CAP = 1 << 20  # bytes of non-event stdout kept as the answer
EVENT_CAP = 10_000  # events per run
PROMPT_ENV_LIMIT = 32 << 10  # a longer prompt is only in ANPORD_PROMPT_FILE
# The drive API emits these itself; a program printing them would break the turn's shape.
_RESERVED = re.compile(r"(session|turn)\.")


class CommandHarness:
    needs_sandbox = True

    def __init__(self, spec: str):
        command = spec.removeprefix("command:")
        command = command.strip()
        if not command:
            raise HarnessSpecError("command harness needs a command: 'command:<shell command>'")
        self.command = command
        self.spec = f"command:{command}"

    async def setup(self) -> None:
        pass  # each turn is its own process: nothing is shared across trials

    async def teardown(self) -> None:
        pass

    async def open_session(self, ctx: HarnessContext, session_id: str) -> CommandSession:
        if ctx.sandbox is None:
            raise HarnessStartError("the command harness needs a sandbox for the trial")
        return CommandSession(self, ctx, session_id)

    def __repr__(self) -> str:
        return f"CommandHarness({self.spec!r})"


def resolve(spec: str) -> CommandHarness:
    """``"command:python3 agent.py"`` → a harness. An empty command raises HarnessSpecError."""
    return CommandHarness(spec)


def _history(messages: Any) -> list[dict[str, str]]:
    out = []
    for m in messages:
        if isinstance(m, dict):
            content = m.get("content")
            text = message_text(m) if isinstance(content, list) else message_text(content)
            out.append({"role": str(m.get("role", "user")), "content": text})
    return out


def _options(raw: Any) -> list[dict[str, str]]:
    if raw is None:
        raw = ["approve", "deny"]
    out = []
    for opt in raw if isinstance(raw, list) else [raw]:
        if isinstance(opt, dict) and "id" in opt:
            out.append({"id": str(opt["id"]), "label": str(opt.get("label", opt["id"]))})
        else:
            out.append({"id": str(opt), "label": str(opt)})
    return out


def _start_failure(code: int, stderr: str) -> str:
    """One line saying why the shell could not start the command."""
    for line in reversed(stderr.strip().splitlines()):
        if m := re.search(r"([^:\s][^:]*): command not found$", line):
            return f"agent command not found: {m.group(1).strip()}"
        if m := re.search(r"([^:\s][^:]*): No such file or directory$", line):
            return f"agent command not found: {m.group(1).strip()}"
        if m := re.search(r"([^:\s][^:]*): Permission denied$", line):
            return f"agent command is not executable: {m.group(1).strip()}"
    last = stderr.strip().splitlines()[-1:] or [""]
    return f"agent command could not start (exit {code}){': ' + last[0] if last[0] else ''}"


class _Run:
    """One execution of the program: parses its output into events, within the caps."""

    def __init__(self, emit: Emit, answered: set[str], log: Callable[[str], None] = lambda _: None):
        self.emit = emit
        self.log = log  # the trial's log: artifacts and --verbose
        self.answered = answered
        self.answer: list[str] = []
        self.answer_bytes = 0
        self.answer_cut = False
        self.message: str | None = None
        self.data: Any = None
        self.requests: dict[str, dict[str, Any]] = {}
        self.stdout_lines = 0
        self.log_bytes = 0
        self.dropped_log = 0
        self.events = 0
        self.dropped_events = 0
        self._ids = itertools.count(1)

    def _log(self, text: str, stream: str) -> None:
        size = len(text.encode("utf-8", "replace"))
        if self.log_bytes + size > LOG_CAP:
            self.dropped_log += size
            return
        self.log_bytes += size
        self.emit(Event(LOG, {"message": text, "stream": stream}))
        self.log(f"[stderr] {text}" if stream == "stderr" else text)

    def _event(self, kind: str, data: dict[str, Any]) -> None:
        if self.events >= EVENT_CAP:
            self.dropped_events += 1
            return
        self.events += 1
        self.emit(Event(kind, data))

    def stdout(self, raw: bytes, cut: bool) -> None:
        self.stdout_lines += 1
        line = raw.decode("utf-8", "replace").rstrip("\r")
        if not cut and line.lstrip().startswith("{"):
            try:
                obj = json.loads(line)
            except ValueError:
                obj = None
            if isinstance(obj, dict) and isinstance(obj.get("type"), str) and obj["type"]:
                self.on_event(obj)
                return
        if cut:
            line += f" [… line cut at {MAX_LINE} bytes]"
        self._log(line, "stdout")
        size = len(raw) + 1
        if self.answer_bytes + size > ANSWER_CAP:
            self.answer_cut = True
        else:
            self.answer_bytes += size
            self.answer.append(line)

    def stderr(self, raw: bytes, cut: bool) -> None:
        self._log(raw.decode("utf-8", "replace").rstrip("\r"), "stderr")

    def on_event(self, obj: dict[str, Any]) -> None:
        kind = obj["type"]
        data = {k: v for k, v in obj.items() if k not in ("type", "ts", "session_id")}
        if _RESERVED.match(kind):
            self._log(
                f"ignored event type {kind!r}: session.* and turn.* events are the runner's",
                "stdout",
            )
            return
        if kind == MESSAGE_COMPLETED:
            data["role"] = str(data.get("role") or "assistant")
            data["text"] = (
                data["text"]
                if isinstance(data.get("text"), str)
                else message_text(data.get("text", ""))
            )
            if data["role"] == "assistant":
                self.message = data["text"]
                self.data = data.get("data")
        elif kind == INPUT_REQUESTED:
            rid = str(data.get("request_id") or f"input-{next(self._ids)}")
            if rid in self.answered or rid in self.requests:
                return  # already answered (a re-run asks again) or already asked in this run
            data.update(
                request_id=rid,
                prompt=str(data.get("prompt", "")),
                options=_options(data.get("options")),
            )
            data.setdefault("tool_name", None)
            data.setdefault("input", None)
            self.requests[rid] = data
        elif kind == TOOL_RESULT:
            data.setdefault("status", "completed")
        self._event(kind, data)

    def finish_notes(self) -> None:
        def note(text: str) -> None:
            self.emit(Event(LOG, {"message": text, "stream": "anpord"}))

        if self.dropped_log:
            note(f"[{self.dropped_log} bytes of output not kept: log cap {LOG_CAP} bytes]")
        if self.dropped_events:
            note(f"[{self.dropped_events} events not kept: cap {EVENT_CAP} per run]")
        if self.answer_cut:
            note(f"[answer cut at {ANSWER_CAP} bytes]")


async def _read_lines(
    stream: asyncio.StreamReader | None, on_line: Callable[[bytes, bool], None]
) -> None:
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


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


class CommandSession:
    def __init__(self, harness: CommandHarness, ctx: HarnessContext, session_id: str):
        assert ctx.sandbox is not None
        self.harness = harness
        self.ctx = ctx
        self.sandbox = ctx.sandbox
        self.session_id = session_id
        state = self.sandbox.state_dir
        safe = re.sub(r"[^\w.-]", "_", session_id)[:80] or "session"
        self.dir = Path(state) / "sessions" / safe
        self.dir.mkdir(parents=True, exist_ok=True)
        self.history: list[dict[str, str]] = []
        # While waiting: the turn's input, its history and the answers given so far.
        self._parked: dict[str, Any] | None = None
        self._pending: dict[str, dict[str, Any]] = {}
        self._proc: asyncio.subprocess.Process | None = None
        self._turn_running = False  # from run_turn's start: a cancel may come before the spawn
        self._cancel_requested = False
        self._closing = False

    # -- the harness protocol ---------------------------------------------------------------

    async def run_turn(self, request: TurnRequest, emit: Emit) -> TurnOutcome:
        self._cancel_requested = False
        self._turn_running = True
        try:
            return await self._turn(request, emit)
        finally:
            self._turn_running = False

    async def _turn(self, request: TurnRequest, emit: Emit) -> TurnOutcome:
        if request.input is None:
            if self._parked is None:
                return TurnOutcome("failed", error="there is no pending input request to answer")
            for response in request.responses:
                if response.request_id not in self._pending:
                    return TurnOutcome(
                        "failed", error=f"no pending input request {response.request_id!r}"
                    )
            for response in request.responses:
                self._pending.pop(response.request_id)
                self._parked["answers"].append(response.to_dict())
                emit(Event(INPUT_RESOLVED, response.to_dict()))
            if self._pending:
                return TurnOutcome("waiting")  # re-run once every open request has its answer
            turn = self._parked
            if request.messages:
                turn["history"] = _history(request.messages)
        else:
            if self._parked is not None:
                return TurnOutcome(
                    "failed",
                    error="the session is waiting on input requests; answer them with t.respond()",
                )
            history = (
                _history(request.messages)
                if request.messages
                else [*self.history, {"role": "user", "content": message_text(request.input)}]
            )
            turn = {"input": request.input, "history": history, "answers": []}
        return await self._run(turn, emit)

    async def cancel(self) -> bool:
        if not self._turn_running:
            return False
        self._cancel_requested = True
        proc = self._proc
        if proc is not None and proc.returncode is None:
            await self._kill(proc)
        # Not spawned yet: _run kills the program as soon as the spawn returns.
        return True

    async def close(self) -> None:
        self._closing = True  # a turn still running is killed: not a sandbox failure
        if self._proc is not None and self._proc.returncode is None:
            await self._kill(self._proc)
        from ..workspace import remove_tree

        remove_tree(self.dir)

    # -- running the program ----------------------------------------------------------------

    def _environment(self, turn: dict[str, Any]) -> dict[str, str]:
        prompt = message_text(turn["input"])
        prompt_file, history_file = self.dir / "prompt.txt", self.dir / "history.json"
        answers_file = self.dir / "input-responses.json"
        _write(prompt_file, prompt)
        _write(history_file, json.dumps(turn["history"], ensure_ascii=False, indent=1))
        _write(answers_file, json.dumps(turn["answers"], ensure_ascii=False, default=str))
        extra = {
            "ANPORD_PROMPT_FILE": str(prompt_file),
            "ANPORD_MODEL": self.ctx.model or "",
            "ANPORD_WORKSPACE": str(self.sandbox.workspace),
            "ANPORD_HOME": str(self.sandbox.home),
            "ANPORD_SESSION_ID": self.session_id,
            "ANPORD_HISTORY_FILE": str(history_file),
            "ANPORD_INPUT_RESPONSES_FILE": str(answers_file),
        }
        if len(prompt.encode("utf-8")) <= PROMPT_ENV_LIMIT and "\0" not in prompt:
            extra["ANPORD_PROMPT"] = prompt
        if not isinstance(turn["input"], str):
            input_file = self.dir / "input.json"
            _write(input_file, json.dumps(turn["input"], ensure_ascii=False, default=str))
            extra["ANPORD_INPUT_FILE"] = str(input_file)
        return self.sandbox.environment(extra)

    async def _kill(self, proc: asyncio.subprocess.Process) -> None:
        await self.sandbox.kill_tree(proc)

    def _kill_now(self, proc: asyncio.subprocess.Process) -> None:
        self.sandbox.kill_tree_now(proc)

    async def _run(self, turn: dict[str, Any], emit: Emit) -> TurnOutcome:
        from ..sandboxes._proc import settle

        answered = {str(a["request_id"]) for a in turn["answers"]}
        run = _Run(emit, answered, self.ctx.log)
        self._parked, self._pending = None, {}  # parked again below only if it asks again
        started = time.monotonic()
        proc = await self.sandbox.spawn(
            ["bash", "-c", self.harness.command],
            env=self._environment(turn),
            cwd=self.sandbox.workspace,
        )
        self._proc = proc
        if self._cancel_requested:
            await self._kill(proc)  # cancelled while it was being spawned
        stderr_tail: list[str] = []

        def on_stderr(raw: bytes, cut: bool) -> None:
            stderr_tail[:] = [*stderr_tail[-19:], raw.decode("utf-8", "replace")]
            run.stderr(raw, cut)

        readers = asyncio.gather(
            _read_lines(proc.stdout, run.stdout), _read_lines(proc.stderr, on_stderr)
        )
        try:
            # When the program exits, what it left running ends too (as a PID namespace would).
            code, _ = await settle(
                proc, readers, lambda: self._kill(proc), lambda: self._kill_now(proc)
            )
        finally:
            self._proc = None
        run.finish_notes()
        if not (self._cancel_requested or self._closing):
            failure = await self.sandbox.setup_failure(proc, "\n".join(stderr_tail))
            if failure:
                raise HarnessStartError(failure)
        if code in (126, 127) and run.stdout_lines == 0 and not self._cancel_requested:
            raise HarnessStartError(_start_failure(code, "\n".join(stderr_tail)))
        emit(
            Event(
                PROCESS_EXITED,
                {
                    "command": self.harness.command,
                    "exit_code": code,
                    "duration": round(time.monotonic() - started, 3),
                },
            )
        )
        if self._cancel_requested:
            return TurnOutcome("cancelled")
        if run.requests:
            self._parked, self._pending = turn, dict(run.requests)
            return TurnOutcome("waiting")
        message = run.message
        if message is None:
            message = "\n".join(run.answer).strip() or None
            if message is not None:
                emit(Event(MESSAGE_COMPLETED, {"role": "assistant", "text": message}))
        self.history = turn["history"] + (
            [{"role": "assistant", "content": message}] if message is not None else []
        )
        return TurnOutcome("completed", message=message, data=run.data)
