"""Gemini CLI (``gemini --output-format stream-json``).

The stream (gemini-cli's ``JsonStreamEvent``): ``init`` (session id, model), ``message`` (the
user's prompt echoed, then the assistant's text in ``delta: true`` chunks), ``tool_use``
(``tool_name``, ``tool_id``, ``parameters``), ``tool_result`` (``tool_id``, ``status``
``success``/``error``, ``output``, ``error``), ``error`` (``severity`` ``warning``/``error``) and a
final ``result`` (``status``, ``error``, ``stats`` with token counts per model).

Choices made here:

- Assistant chunks are joined into one ``message.completed`` per stretch of text between other
  events; the answer is the last such stretch. A stream cut in the middle of a stretch has that
  partial text only in ``TurnEnd.message`` (``finish`` cannot emit events).
- The echoed user prompt is kept raw, not as a message: the eval sent it.
- **Failure**: a ``result`` with ``status: "error"``, or any ``error`` event of severity
  ``error`` (``Maximum session turns exceeded`` is followed by a ``result`` that says success).
  Warnings (loop detected) are kept raw. No ``result``: failed.
- **Shell commands**: gemini runs with ``--debug``, the only mode whose stream carries a shell
  command's exit code whatever it printed: the result reads ``Output: <what it printed>`` then
  ``Exit Code: N`` (only when N is not 0), ``Signal: …``, ``Process Group PGID: …``. The output is
  what the command printed (``(empty)`` is ""), the exit code N, else 0. Without debug mode
  (a stream recorded elsewhere) gemini shows the output alone, or ``Command exited with code: N``
  when the command printed nothing: that N is used, the output is "", and a command that printed
  something has no exit code (None). A non-zero exit code makes the ``tool.result`` failed, as
  for every CLI.
- **Usage** is the ``result`` stats: ``input_tokens`` includes the cached ones (``cached`` is that
  share); ``output_tokens`` adds the thinking tokens, which gemini counts only in
  ``total_tokens`` (input + output + thoughts), kept as ``reasoning_output_tokens``; gemini
  reports no cost: None.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from ...events import Event
from .._stream import TurnEnd
from ._base import MESSAGE_CAP, JsonStreamParser, as_dict, as_int, as_str, text_of
from ._invocation import CliInfo, Invocation, SetupFile, prompt_source
from ._usage import usage_event

__all__ = ["GEMINI", "GeminiStreamParser", "gemini_command"]

SHELL_TOOLS = {"run_shell_command"}
FILE_TOOLS = {"write_file", "replace", "edit", "smart_edit"}
_PATH_KEYS = ("file_path", "absolute_path", "path", "filePath")


class GeminiStreamParser(JsonStreamParser):
    """Parses one ``gemini --output-format stream-json`` run."""

    cli = "gemini"

    def __init__(self, *, workspace: str | os.PathLike[str] | None = None):
        super().__init__(workspace=workspace)
        self._chunks: list[str] = []
        self._size = 0
        self._calls: dict[str, tuple[str, dict[str, Any]]] = {}
        self._result: dict[str, Any] | None = None
        self._error: str | None = None  # from an error event of severity "error"

    def handle(self, kind: str | None, obj: dict[str, Any]) -> list[Event]:
        if kind == "message" and obj.get("role") == "assistant":
            self._add_text(text_of(obj.get("content")))
            if obj.get("delta") is True:
                return []  # its text is in the message.completed that ends this stretch
            return self._flush()
        events = self._flush()
        if kind == "init":
            self.session_id = as_str(obj.get("session_id")) or self.session_id
        elif kind == "tool_use":
            cid = as_str(obj.get("tool_id")) or ""
            name = as_str(obj.get("tool_name")) or "unknown"
            params = obj.get("parameters")
            self._calls[cid] = (name, as_dict(params))
            return [*events, self.tool_called(cid, name, params)]
        elif kind == "tool_result":
            return events + self._tool_result(obj)
        elif kind == "error":
            if obj.get("severity") != "warning":
                self._error = text_of(obj.get("message")) or "gemini reported an error"
        elif kind == "result":
            self._result = obj
            events += self.usage.record(_usage(as_dict(obj.get("stats"))))
        return [*events, self.raw(kind, obj)]

    def _add_text(self, text: str) -> None:
        if self._size >= MESSAGE_CAP:
            return
        text = text[: MESSAGE_CAP - self._size]
        self._chunks.append(text)
        self._size += len(text)

    def _flush(self) -> list[Event]:
        if not self._chunks:
            return []
        text = "".join(self._chunks)
        self._chunks, self._size = [], 0
        return [self.assistant(text)] if text.strip() else []

    def _tool_result(self, obj: dict[str, Any]) -> list[Event]:
        cid = as_str(obj.get("tool_id")) or ""
        name, params = self._calls.get(cid, (None, {}))
        failed = obj.get("status") != "success"
        output = text_of(obj.get("output"))
        error = text_of(as_dict(obj.get("error")).get("message")) or None
        if name in SHELL_TOOLS:
            shell = _shell_result(output, failed)
            failed = failed or shell.exit_code not in (None, 0)
            if failed and error is None:
                error = shell.error or shell.output.strip() or f"exit code {shell.exit_code}"
            return [
                self.tool_result(cid, name, shell.output, failed=failed, error=error),
                self.command(
                    text_of(params.get("command")), shell.exit_code, shell.output, call_id=cid
                ),
            ]
        events = [self.tool_result(cid, name, output, failed=failed, error=error)]
        if name in FILE_TOOLS and not failed:
            events += self.files_changed(
                [next((params[k] for k in _PATH_KEYS if params.get(k)), None)]
            )
        return events

    def end(self, exit_code: int | None) -> TurnEnd:
        if self._chunks:
            self.message = "".join(self._chunks)  # the text of a stretch the stream cut short
        usage = self.usage.totals()
        result = self._result
        if result is None:
            return self.ended_early("result", exit_code, self._error)
        if result.get("status") != "success" or self._error:
            err = as_dict(result.get("error"))
            error = text_of(err.get("message")) or self._error or "gemini reported an error"
            if err.get("type"):
                error = f"{err['type']}: {error}"
            return TurnEnd(
                "failed", message=self.message, error=error, resume=self.session_id, usage=usage
            )
        if exit_code not in (0, None):
            error = f"gemini exited with code {exit_code} after reporting success"
            return TurnEnd(
                "failed", message=self.message, error=error, resume=self.session_id, usage=usage
            )
        return TurnEnd("completed", message=self.message, resume=self.session_id, usage=usage)


def _usage(stats: dict[str, Any]) -> Event | None:
    """The ``result`` stats as a usage event: thinking tokens (``total_tokens`` less input and
    output) are output tokens too."""
    given_in, given_out = as_int(stats.get("input_tokens")), as_int(stats.get("output_tokens"))
    total = as_int(stats.get("total_tokens"))
    thoughts = 0
    if total is not None and given_in is not None and given_out is not None:
        thoughts = max(total - given_in - given_out, 0)
    return usage_event(
        input_tokens=given_in,
        output_tokens=None if given_out is None else given_out + thoughts,
        cached_input_tokens=stats.get("cached"),
        reasoning_output_tokens=thoughts or None,
    )


@dataclass(frozen=True)
class _Shell:
    output: str  # what the command printed
    exit_code: int | None
    error: str | None = None  # why it could not run (a spawn error), when gemini said


_NO_OUTPUT_EXIT = re.compile(r"Command exited with code: (-?\d+)")
_NO_OUTPUT = re.compile(r"Command (?:terminated by signal: .*|failed: .*|cancelled by user\.)")
# The lines debug mode puts after a command's output, last first.
_TRAILER = re.compile(r"\n(Exit Code|Signal|Background PIDs|Process Group PGID): ([^\n]*)\Z")
_SPAWN_ERROR = re.compile(r"\A\(empty\)\nError: (.*)\Z", re.DOTALL)


def _shell_result(text: str, failed: bool) -> _Shell:
    """What a ``run_shell_command`` result says: the command's own output and exit code."""
    if text.startswith("Output: "):  # debug mode: the model's view, exit code included
        body, trailer = text[len("Output: ") :], {}
        while m := _TRAILER.search(body):
            trailer[m.group(1)] = m.group(2)
            body = body[: m.start()]
        error = None
        if m := _SPAWN_ERROR.match(body):
            body, error = "", m.group(1)
        elif body == "(empty)":
            body = ""
        code = _int(trailer.get("Exit Code"))
        if code is None and "Signal" not in trailer and error is None and not failed:
            code = 0  # debug mode names only a non-zero code
        return _Shell(body, code, error)
    stripped = text.strip()
    if m := _NO_OUTPUT_EXIT.fullmatch(stripped):
        return _Shell("", int(m.group(1)))
    if _NO_OUTPUT.fullmatch(stripped):
        return _Shell("", None, stripped)
    if not stripped and not failed:
        return _Shell("", 0)  # nothing printed, no code shown: the display of a success
    return _Shell(text, None)


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def gemini_command(
    *,
    prompt_file: str | None = None,
    prompt: str | None = None,
    model: str | None = None,
    system_prompt: str | None = None,
    resume: str | None = None,
    executable: str = "gemini",
) -> Invocation:
    """The argv of one unattended ``gemini`` turn.

    The prompt file is read on stdin (gemini runs headless when stdin is not a terminal);
    ``--approval-mode=yolo`` approves every tool; ``--debug`` makes every shell result name its
    exit code (its debug lines go to stderr); ``GEMINI_CLI_TRUST_WORKSPACE=true`` trusts
    the workspace (gemini falls back to asking in an untrusted folder); ``resume`` continues that
    session; ``system_prompt`` goes to ``~/.gemini/GEMINI.md``, gemini's user-wide context
    (``GEMINI_SYSTEM_MD`` would replace its whole system prompt, tools guidance included).
    """
    stdin, text = prompt_source(prompt_file, prompt)
    argv = [executable, "--output-format", "stream-json", "--approval-mode=yolo", "--debug"]
    if model:
        argv += ["--model", model]
    if resume:
        argv += ["--resume", resume]
    if text is not None:
        argv.append(f"--prompt={text}")  # one token: a prompt starting with "-" stays a value
    files = (SetupFile("home", ".gemini/GEMINI.md", system_prompt),) if system_prompt else ()
    env = {"GEMINI_CLI_TRUST_WORKSPACE": "true"}
    return Invocation(tuple(argv), stdin=stdin, env=env, files=files)


GEMINI = CliInfo(
    name="gemini",
    title="Gemini CLI",
    executable="gemini",
    package="npm: @google/gemini-cli",
    version_argv=("gemini", "--version"),
    credentials=(
        ("GEMINI_API_KEY",),
        ("GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"),
        ("GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION"),
    ),
    secret_variables=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    credential_files=(".gemini/oauth_creds.json",),
    notes=(
        "GEMINI_API_KEY (Google AI Studio) is the simplest; Vertex AI takes GOOGLE_API_KEY with "
        "GOOGLE_GENAI_USE_VERTEXAI=true, or a service account.",
        "Runs with --approval-mode=yolo: every tool runs without asking, so run it in a sandbox.",
        "Each turn is a new process continuing the session with --resume <session id>; sessions "
        "are stored under the trial's HOME (~/.gemini).",
        "Runs with --debug: the only mode whose stream carries every shell command's exit code "
        "(its debug lines go to stderr, kept in the trial's log); gemini reports tokens but no cost.",
    ),
)
