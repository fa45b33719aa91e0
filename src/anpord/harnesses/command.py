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
import json
import re
from typing import Any

from ..events import INPUT_RESOLVED, LOG, MESSAGE_COMPLETED, PROCESS_EXITED, Event, message_text
from ._command_stream import ANSWER_CAP, CommandStreamParser
from ._process import EVENT_CAP, LOG_CAP, MAX_LINE, ProgramRun, ProgramSession
from ._protocol import (
    Emit,
    HarnessContext,
    HarnessSpecError,
    HarnessStartError,
    TurnOutcome,
    TurnRequest,
)

__all__ = [
    "ANSWER_CAP",
    "EVENT_CAP",
    "LOG_CAP",
    "MAX_LINE",
    "PROCESS_EXITED",
    "CommandHarness",
    "CommandSession",
    "resolve",
    "start_failure",
    "stderr_tail",
]

PROMPT_ENV_LIMIT = 32 << 10  # a longer prompt is only in ANPORD_PROMPT_FILE
# How much of a program's stderr process.exited keeps when it exits non-zero with no answer.
STDERR_TAIL_LINES = 5
STDERR_TAIL_LINE = 300


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

    async def prepare_sandbox(self, ctx: HarnessContext) -> None:
        pass  # nothing to put in a trial's sandbox before the agent runs

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


def start_failure(code: int, stderr: str) -> str:
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


def stderr_tail(stderr: str, lines: int = STDERR_TAIL_LINES) -> str:
    """The last non-blank stderr lines, each cut to ``STDERR_TAIL_LINE`` characters; led by the
    first line before them that reads as an error, when there is one (node names the missing
    module, then prints a stack and an object dump: the cause is not among the last lines)."""
    from .coding._stderr import _ERRORISH, _meaningful

    every = [line.rstrip() for line in stderr.splitlines() if line.strip()]
    kept = every[-lines:]
    if not any(_ERRORISH.search(line) for line in kept):
        cause = next((line for line in every[:-lines] if _meaningful(line) and _ERRORISH.search(line)), None)
        if cause is not None:
            kept = [cause, *kept]
    cap = STDERR_TAIL_LINE
    return "\n".join(line[:cap] + ("…" if len(line) > cap else "") for line in kept)


class CommandSession(ProgramSession):
    def __init__(self, harness: CommandHarness, ctx: HarnessContext, session_id: str):
        assert ctx.sandbox is not None
        super().__init__(ctx.sandbox, session_id)
        self.harness = harness
        self.ctx = ctx
        self.history: list[dict[str, str]] = []
        # While waiting: the turn's input, its history and the answers given so far.
        self._parked: dict[str, Any] | None = None
        self._pending: dict[str, dict[str, Any]] = {}

    # -- the harness protocol ---------------------------------------------------------------

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

    # -- running the program ----------------------------------------------------------------

    async def _environment(self, turn: dict[str, Any]) -> dict[str, str]:
        prompt = message_text(turn["input"])
        prompt_file, history_file = self.dir / "prompt.txt", self.dir / "history.json"
        answers_file = self.dir / "input-responses.json"
        # Through the sandbox's file protocol: the files are where its programs see them.
        write = self.sandbox.write_file
        await write(prompt_file, prompt.encode("utf-8"))
        await write(history_file, json.dumps(turn["history"], ensure_ascii=False, indent=1).encode("utf-8"))
        await write(answers_file, json.dumps(turn["answers"], ensure_ascii=False, default=str).encode("utf-8"))
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
            await write(input_file, json.dumps(turn["input"], ensure_ascii=False, default=str).encode("utf-8"))
            extra["ANPORD_INPUT_FILE"] = str(input_file)
        return self.sandbox.environment(extra)

    async def _on_spawn(self, proc: asyncio.subprocess.Process) -> None:
        if self._cancel_requested:
            await self.sandbox.kill_tree(proc)  # cancelled while it was being spawned

    async def _run(self, turn: dict[str, Any], emit: Emit) -> TurnOutcome:
        answered = {str(a["request_id"]) for a in turn["answers"]}
        parser = CommandStreamParser(answered)
        self._parked, self._pending = None, {}  # parked again below only if it asks again
        program = self._program = ProgramRun(self.sandbox, parser, emit, self.ctx.log)
        try:
            done = await program.run(
                ["bash", "-c", self.harness.command], await self._environment(turn), self.sandbox.workspace,
                on_spawn=self._on_spawn, expected_kill=lambda: self._cancel_requested or self._closing,
            )
        finally:
            self._program = None
        if parser.answer_cut:
            emit(Event(LOG, {"message": f"[answer cut at {ANSWER_CAP} bytes]", "stream": "anpord"}))
        if done.setup_failure:
            raise HarnessStartError(done.setup_failure)
        if done.exit_code in (126, 127) and done.stdout_lines == 0 and not self._cancel_requested:
            raise HarnessStartError(start_failure(done.exit_code, done.stderr_tail))
        end = parser.finish(done.exit_code)
        exited: dict[str, Any] = {"command": self.harness.command, "exit_code": done.exit_code,
                                  "duration": round(done.duration, 3)}
        silent = end.status == "completed" and end.message is None
        if done.exit_code != 0 and silent and not self._cancel_requested:
            # Exited non-zero with no answer: most likely it never got going (a missing file, a
            # crash on import). Its stderr is the cause; the verdict's reason quotes it.
            exited["stderr_tail"] = stderr_tail(done.stderr_tail)
        emit(Event(PROCESS_EXITED, exited))
        if self._cancel_requested:
            return TurnOutcome("cancelled")
        if end.status == "waiting":
            self._parked, self._pending = turn, dict(parser.requests)
            return TurnOutcome("waiting")
        message = end.message
        if message is not None and parser.message_from_stdout:
            emit(Event(MESSAGE_COMPLETED, {"role": "assistant", "text": message}))
        self.history = turn["history"] + (
            [{"role": "assistant", "content": message}] if message is not None else []
        )
        return TurnOutcome("completed", message=message, data=end.data)
