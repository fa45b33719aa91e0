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
- **Shell exit codes**: ``run_shell_command``'s result shows ``Command exited with code: N``
  only when the command printed nothing, and ``Exit Code: N`` in debug mode; that N is used. A
  command that printed nothing and says no code succeeded (0). A command that printed something
  carries no exit code in this stream: None.
- **Usage** is the ``result`` stats (``input_tokens`` includes the cached ones, ``cached`` is
  that share); gemini reports no cost: None.
"""

from __future__ import annotations

import os
import re
from typing import Any

from ...events import Event
from .._stream import TurnEnd
from ._base import MESSAGE_CAP, JsonStreamParser, as_dict, as_str, text_of
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
            stats = as_dict(obj.get("stats"))
            figures = usage_event(
                input_tokens=stats.get("input_tokens"),
                output_tokens=stats.get("output_tokens"),
                cached_input_tokens=stats.get("cached"),
            )
            events += self.usage.record(figures)
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
        events = [self.tool_result(cid, name, output, failed=failed, error=error)]
        if name in SHELL_TOOLS:
            code = _shell_exit_code(output, failed)
            events.append(self.command(text_of(params.get("command")), code, output, call_id=cid))
        elif name in FILE_TOOLS and not failed:
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


_NO_OUTPUT_EXIT = re.compile(r"Command exited with code: (-?\d+)")
_DEBUG_EXIT = re.compile(r"^Exit Code: (-?\d+)$", re.MULTILINE)


def _shell_exit_code(output: str, failed: bool) -> int | None:
    text = output.strip()
    if m := _NO_OUTPUT_EXIT.fullmatch(text):
        return int(m.group(1))
    if text.startswith("Output:"):  # debug mode shows the model's view: a non-zero code is named
        m = _DEBUG_EXIT.search(text)
        return int(m.group(1)) if m else (None if failed else 0)
    if not text and not failed:
        return 0  # nothing printed, no code shown: the display of a command that succeeded
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
    ``--approval-mode=yolo`` approves every tool, and ``GEMINI_CLI_TRUST_WORKSPACE=true`` trusts
    the workspace (gemini falls back to asking in an untrusted folder); ``resume`` continues that
    session; ``system_prompt`` goes to ``~/.gemini/GEMINI.md``, gemini's user-wide context
    (``GEMINI_SYSTEM_MD`` would replace its whole system prompt, tools guidance included).
    """
    stdin, text = prompt_source(prompt_file, prompt)
    argv = [executable, "--output-format", "stream-json", "--approval-mode=yolo"]
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
    credential_files=(".gemini/oauth_creds.json",),
    notes=(
        "GEMINI_API_KEY (Google AI Studio) is the simplest; Vertex AI takes GOOGLE_API_KEY with "
        "GOOGLE_GENAI_USE_VERTEXAI=true, or a service account.",
        "Runs with --approval-mode=yolo: every tool runs without asking, so run it in a sandbox.",
        "Each turn is a new process continuing the session with --resume <session id>; sessions "
        "are stored under the trial's HOME (~/.gemini).",
        "The stream carries no exit code for a shell command that printed output; gemini reports "
        "tokens but no cost.",
    ),
)
