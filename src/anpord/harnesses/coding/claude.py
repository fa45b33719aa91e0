"""Claude Code (``claude -p --output-format stream-json --verbose``).

The stream: ``system`` lines (``init`` with the session id and working folder, hooks, tasks,
retries), ``assistant`` lines (one model response can span several lines sharing one
``message.id``, each holding one content block: text, thinking or a ``tool_use``), ``user`` lines
(the ``tool_result`` of each call, plus a structured ``tool_use_result``), and one final ``result``
line (answer, cost, usage, ``is_error``). Lines of a subagent carry ``parent_tool_use_id``.

Choices made here:

- **Usage** comes from the final ``result`` only (its ``modelUsage`` summed over models when
  present — it counts subagents' tokens too — else its ``usage``), never from the per-message
  ``usage`` that the lines of one response repeat. A stream cut before its ``result`` reports no
  usage. Cost is ``total_cost_usd`` (older versions: ``cost_usd``/``total_cost``; else the sum of
  ``modelUsage[*].costUSD``; else None).
- **Failure**: the ``result`` decides, by ``is_error`` *and* ``subtype`` (an API error comes as
  ``subtype: "success"`` with ``is_error: true``; older versions sent ``error_max_turns`` with
  ``is_error: false``). No ``result`` line: failed.
- **Shell exit codes**: the Bash tool's result has no exit-code field. A failed command's text
  starts with ``Exit code N`` — that N is used. A result with ``is_error: false`` and no
  ``returnCodeInterpretation`` is exit code 0 (Claude Code reports any other code as an error).
  Everything else is None, never a guess: an error without ``Exit code N`` (timeout, interrupt,
  refusal), a command sent to the background, or a non-zero code Claude Code judged harmless
  (``returnCodeInterpretation: "No matches found"`` for a ``grep`` that matched nothing).
- **File changes** come from the successful results of Write, Edit, MultiEdit and NotebookEdit
  calls (a call whose result never came is not counted: the workspace diff shows what changed).
- The API-error text Claude Code writes as a synthetic assistant message is not an answer: it is
  kept raw and becomes the turn's error.
"""

from __future__ import annotations

import os
import re
from typing import Any

from ...events import Event
from .._stream import TurnEnd
from ._base import (
    JsonStreamParser,
    as_dict,
    as_int,
    as_list,
    as_str,
    exit_code_in,
    text_of,
)
from ._invocation import ARG_LIMIT, CliInfo, Invocation, SetupFile, prompt_source
from ._usage import difference, usage_event
from ...mocks._dedupe import mcp_name

__all__ = ["CLAUDE", "ClaudeStreamParser", "claude_command"]

# Tools that write files, and the input key naming the file.
FILE_TOOLS = {
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}
SHELL_TOOLS = {"Bash"}
TOOL_USE_BLOCKS = {"tool_use", "server_tool_use", "mcp_tool_use"}


class ClaudeStreamParser(JsonStreamParser):
    """Parses one ``claude -p --output-format stream-json --verbose`` run."""

    cli = "claude"

    def __init__(self, *, workspace: str | os.PathLike[str] | None = None):
        super().__init__(workspace=workspace)
        self._calls: dict[str, tuple[str, dict[str, Any]]] = {}  # tool_use id -> (name, input)
        self._texts: set[tuple[str, str]] = set()  # (message id, text) already emitted
        self._result: dict[str, Any] | None = None
        self._result_totals: dict[str, Any] | None = None  # figures of the previous result line
        self._last_error: str | None = None

    def handle(self, kind: str | None, obj: dict[str, Any]) -> list[Event]:
        sid = as_str(obj.get("session_id"))
        if sid:
            self.session_id = sid
        if kind == "assistant":
            return self._assistant(obj)
        if kind == "user":
            return self._user(obj)
        if kind == "result":
            return self._final(obj)
        if kind == "system":
            self._system(obj)
        return [self.raw(kind, obj)]

    # -- lines ---------------------------------------------------------------------------------

    def _system(self, obj: dict[str, Any]) -> None:
        subtype = obj.get("subtype")
        if subtype == "init" and self.workspace is None:
            cwd = as_str(obj.get("cwd"))
            if cwd:
                self.workspace = os.path.normpath(cwd)
        elif subtype == "api_retry":
            self._last_error = text_of(obj.get("error")) or self._last_error

    def _assistant(self, obj: dict[str, Any]) -> list[Event]:
        message = as_dict(obj.get("message"))
        if obj.get("is_api_error_message") or message.get("model") == "<synthetic>":
            self._last_error = text_of(_text_blocks(message.get("content"))) or text_of(
                obj.get("error")
            )
            return [self.raw("assistant", obj)]
        mid = as_str(message.get("id")) or ""
        parent = as_str(obj.get("parent_tool_use_id"))
        content = message.get("content")
        blocks = (
            [{"type": "text", "text": content}] if isinstance(content, str) else as_list(content)
        )
        events: list[Event] = []
        for block in blocks:
            block = as_dict(block)
            btype = block.get("type")
            if btype == "text" and isinstance(block.get("text"), str):
                text = block["text"]
                if (mid, text) in self._texts or not text.strip():
                    continue  # the same block repeated on another line of this message
                self._texts.add((mid, text))
                if parent:  # a subagent's words: not the answer
                    events.append(
                        Event("claude.subagent_text", {"parent_call_id": parent, "text": text})
                    )
                else:
                    events.append(self.assistant(text))
            elif btype in TOOL_USE_BLOCKS:
                cid = as_str(block.get("id"))
                if cid is None or cid in self._calls:
                    continue
                # An MCP tool's mcp__<server>__<tool> is <server>.<tool>, as in every harness.
                name = mcp_name(as_str(block.get("name")) or "unknown")
                tool_input = block.get("input")
                self._calls[cid] = (name, as_dict(tool_input))
                extra = {"parent_call_id": parent} if parent else {}
                events.append(self.tool_called(cid, name, tool_input, **extra))
        # A line holding only thinking (or anything unmapped) is kept as it came.
        return events or [self.raw("assistant", obj)]

    def _user(self, obj: dict[str, Any]) -> list[Event]:
        message = as_dict(obj.get("message"))
        results = [
            as_dict(b)
            for b in as_list(message.get("content"))
            if as_dict(b).get("type") == "tool_result"
        ]
        # The structured result belongs to the line's tool result when it holds exactly one.
        structured = (
            obj.get("tool_use_result", obj.get("toolUseResult")) if len(results) == 1 else None
        )
        parent = as_str(obj.get("parent_tool_use_id"))
        events: list[Event] = []
        for block in results:
            events += self._tool_result(block, structured, parent)
        return events or [self.raw("user", obj)]

    def _tool_result(
        self, block: dict[str, Any], structured: Any, parent: str | None
    ) -> list[Event]:
        cid = as_str(block.get("tool_use_id")) or ""
        name, tool_input = self._calls.get(cid, (None, {}))
        failed = bool(block.get("is_error"))
        output = text_of(block.get("content"))
        extra = {"parent_call_id": parent} if parent else {}
        events = [self.tool_result(cid, name, output, failed=failed, **extra)]
        if name in SHELL_TOOLS:
            command = text_of(tool_input.get("command"))
            code = _bash_exit_code(failed, output, structured)
            events.append(
                self.command(command, code, _bash_output(output, structured), call_id=cid)
            )
        elif name in FILE_TOOLS and not failed:
            path = tool_input.get(FILE_TOOLS[name]) or as_dict(structured).get("filePath")
            events += self.files_changed([path])
        return events

    def _final(self, obj: dict[str, Any]) -> list[Event]:
        self._result = obj
        totals = _result_usage(obj)
        # A process serving several turns restates its running totals on each result.
        figures = difference(totals, self._result_totals)
        self._result_totals = totals
        events = self.usage.record(usage_event(**figures))
        return [*events, self.raw("result", obj)]

    # -- the end -------------------------------------------------------------------------------

    def end(self, exit_code: int | None) -> TurnEnd:
        result = self._result
        if result is None:
            return self.ended_early("result", exit_code, self._last_error)
        usage = self.usage.totals()
        subtype = as_str(result.get("subtype"))
        if result.get("is_error") is True or (subtype not in (None, "success")):
            return TurnEnd(
                "failed",
                message=self.message,
                error=_error_text(result),
                resume=self.session_id,
                usage=usage,
            )
        if exit_code not in (0, None):
            error = f"claude exited with code {exit_code} after reporting success"
            return TurnEnd(
                "failed", message=self.message, error=error, resume=self.session_id, usage=usage
            )
        answer = as_str(result.get("result"))
        return TurnEnd(
            "completed",
            message=answer if answer else self.message,
            resume=self.session_id,
            data=result.get("structured_output"),
            usage=usage,
        )


def _text_blocks(content: Any) -> Any:
    if isinstance(content, list):
        return [b for b in content if as_dict(b).get("type") == "text"]
    return content


def _bash_exit_code(failed: bool, output: str, structured: Any) -> int | None:
    first = output.split("\n", 1)[0]
    code = exit_code_in(first)
    if code is None and isinstance(structured, str):
        code = exit_code_in(structured.split("\n", 1)[0])
    if code is not None:
        return code
    info = as_dict(structured)
    interpretation = as_str(info.get("returnCodeInterpretation"))
    code = exit_code_in(interpretation)
    if code is not None:
        return code
    if failed or interpretation or info.get("interrupted") or info.get("backgroundTaskId"):
        return None
    return 0


# What Claude Code puts in a tool result that has no content: not the command's output.
_NO_OUTPUT = re.compile(r"\(\w+ completed with no output\)")


def _bash_output(output: str, structured: Any) -> str:
    """What the command printed: the structured stdout and stderr, else the result's text less
    its ``Exit code N`` line and Claude Code's placeholder for an empty result."""
    info = as_dict(structured)
    stdout, stderr = as_str(info.get("stdout")), as_str(info.get("stderr"))
    if stdout is not None or stderr is not None:
        return "\n".join(s for s in (stdout, stderr) if s)
    if _NO_OUTPUT.fullmatch(output.strip()):
        return ""
    first, _, rest = output.partition("\n")
    return rest if exit_code_in(first) is not None else output


def _result_usage(result: dict[str, Any]) -> dict[str, Any]:
    models = [as_dict(m) for m in as_dict(result.get("modelUsage")).values()]
    figures: dict[str, Any] = {}
    if models:
        read = sum(as_int(m.get("cacheReadInputTokens")) or 0 for m in models)
        write = sum(as_int(m.get("cacheCreationInputTokens")) or 0 for m in models)
        fresh = sum(as_int(m.get("inputTokens")) or 0 for m in models)
        figures = {
            "input_tokens": fresh + read + write,
            "output_tokens": sum(as_int(m.get("outputTokens")) or 0 for m in models),
            "cached_input_tokens": read,
            "cache_write_input_tokens": write,
        }
    elif isinstance(result.get("usage"), dict):
        usage = result["usage"]
        read = as_int(usage.get("cache_read_input_tokens")) or 0
        write = as_int(usage.get("cache_creation_input_tokens")) or 0
        given = as_int(usage.get("input_tokens"))
        figures = {
            "input_tokens": None if given is None else given + read + write,
            "output_tokens": as_int(usage.get("output_tokens")),
            "cached_input_tokens": read,
            "cache_write_input_tokens": write,
        }
    cost = next(
        (
            result[k]
            for k in ("total_cost_usd", "cost_usd", "total_cost")
            if _is_number(result.get(k))
        ),
        None,
    )
    if cost is None and models and any(_is_number(m.get("costUSD")) for m in models):
        cost = sum(m["costUSD"] for m in models if _is_number(m.get("costUSD")))
    figures["cost"] = cost
    return figures


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _error_text(result: dict[str, Any]) -> str:
    parts = []
    text = as_str(result.get("result"))
    if text:
        parts.append(text.strip())
    for err in as_list(result.get("errors")):
        if text_of(err).strip():
            parts.append(text_of(err).strip())
    subtype = as_str(result.get("subtype"))
    if not parts:
        parts.append(subtype or "Claude Code reported an error")
        turns = as_int(result.get("num_turns"))
        if subtype == "error_max_turns" and turns is not None:
            parts[-1] += f" (after {turns} turns)"
    status = as_int(result.get("api_error_status"))
    prefix = f"API error {status}: " if status else ""
    return prefix + "; ".join(parts)


def claude_command(
    *,
    prompt_file: str | None = None,
    prompt: str | None = None,
    model: str | None = None,
    system_prompt: str | None = None,
    resume: str | None = None,
    executable: str = "claude",
) -> Invocation:
    """The argv of one unattended ``claude -p`` turn.

    The prompt file is read on stdin (``claude -p`` reads its prompt there when no argument
    holds it); ``system_prompt`` is appended with ``--append-system-prompt`` (past the argument
    limit, it goes to ``~/.claude/CLAUDE.md`` instead); ``resume`` continues that session.
    ``IS_SANDBOX=1`` lets ``--dangerously-skip-permissions`` run as root, which it otherwise
    refuses; the trial's sandbox is the isolation.
    """
    stdin, text = prompt_source(prompt_file, prompt)
    argv = [
        executable,
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--dangerously-skip-permissions",
    ]
    if model:
        argv += ["--model", model]
    files: tuple[SetupFile, ...] = ()
    if system_prompt:
        if len(system_prompt.encode("utf-8")) <= ARG_LIMIT and "\0" not in system_prompt:
            argv += ["--append-system-prompt", system_prompt]
        else:
            files = (SetupFile("home", ".claude/CLAUDE.md", system_prompt),)
    if resume:
        argv += ["--resume", resume]
    if text is not None:
        argv += ["--", text]
    env = {"IS_SANDBOX": "1", "DISABLE_AUTOUPDATER": "1"}
    return Invocation(tuple(argv), stdin=stdin, env=env, files=files)


CLAUDE = CliInfo(
    name="claude",
    title="Claude Code",
    executable="claude",
    package="npm: @anthropic-ai/claude-code",
    version_argv=("claude", "--version"),
    credentials=(
        ("ANTHROPIC_API_KEY",),
        ("CLAUDE_CODE_OAUTH_TOKEN",),
        ("ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"),
        ("CLAUDE_CODE_USE_BEDROCK", "AWS_REGION"),
        ("CLAUDE_CODE_USE_VERTEX", "ANTHROPIC_VERTEX_PROJECT_ID", "CLOUD_ML_REGION"),
    ),
    secret_variables=("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"),
    credential_files=(".claude/.credentials.json",),
    notes=(
        "CLAUDE_CODE_OAUTH_TOKEN is the long-lived token `claude setup-token` prints for a Claude "
        "subscription; an API key is billed per token.",
        "Runs with --dangerously-skip-permissions: every tool runs without asking, so run it in a "
        "sandbox (IS_SANDBOX=1 is set so it also starts as root).",
        "Each turn is a new process continuing the session with --resume; the session is stored "
        "under the trial's HOME (~/.claude), which lives as long as the trial.",
        "Cost (total_cost_usd) is Claude Code's own estimate from list prices, also under a "
        "subscription.",
    ),
)
