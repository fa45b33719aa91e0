"""OpenAI Codex (``codex exec --json``).

Two stream shapes have shipped, and both are read:

- the item stream (codex 0.4x and later): ``thread.started`` (the thread id, which ``codex exec
  resume`` takes), ``turn.started``, ``item.started`` / ``item.updated`` / ``item.completed``
  around items (``agent_message``, ``reasoning``, ``command_execution``, ``file_change``,
  ``mcp_tool_call``, ``web_search``, ``todo_list``, ``collab_tool_call``, ``error``), then
  ``turn.completed`` (with usage) or ``turn.failed``; a top-level ``error`` is fatal unless a
  ``turn.completed`` follows it (retries are reported that way). Early builds of it said
  ``session.created`` and ``item_type``/``assistant_message``; those are read too.
- the older ``msg`` stream: ``{"id": .., "msg": {"type": "agent_message", ..}}`` lines
  (``exec_command_begin``/``end``, ``patch_apply_begin``/``end``, ``mcp_tool_call_begin``/``end``,
  ``token_count``, ``task_complete``, ``error``), after a configuration line without a type.

Choices made here:

- Tool names are the item types: ``command_execution``, ``file_change``, ``web_search``; an MCP
  call is named by its tool, with its ``server`` alongside.
- A command's text is the script inside codex's shell wrapper (``bash -lc 'cat a.js'`` →
  ``cat a.js``), the exit code its ``exit_code``.
- **Usage**: ``turn.completed`` reports the thread's running totals, and a resumed thread starts
  from the totals of its earlier turns. Each ``usage`` event holds what this run added: the
  difference from the previous report, or from ``thread_usage_before`` (the ``thread_usage`` of
  the previous turn's parser, for the same thread). Codex reports no cost: ``cost`` is None.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...events import Event
from .._stream import TurnEnd
from ._base import (
    JsonStreamParser,
    as_dict,
    as_int,
    as_list,
    as_str,
    text_of,
    unwrap_shell,
)
from ._invocation import CliInfo, Invocation, SetupFile, prompt_source
from ._usage import difference, usage_event
from ...mocks._dedupe import mcp_name

__all__ = ["CODEX", "CodexStreamParser", "ThreadUsage", "codex_command", "codex_credentials"]

_USAGE_KEYS = (
    "input_tokens",
    "cached_input_tokens",
    "cache_write_input_tokens",
    "output_tokens",
    "reasoning_output_tokens",
)


@dataclass(frozen=True)
class ThreadUsage:
    """A thread's running token totals as codex last reported them."""

    thread_id: str
    totals: Mapping[str, float] = field(default_factory=dict)


class CodexStreamParser(JsonStreamParser):
    """Parses one ``codex exec --json`` run."""

    cli = "codex"

    def __init__(
        self,
        *,
        workspace: str | os.PathLike[str] | None = None,
        thread_usage_before: ThreadUsage | None = None,
    ):
        super().__init__(workspace=workspace)
        self._before = thread_usage_before
        self._running: dict[str, Any] | None = None  # the totals last reported in this run
        self._called: set[str] = set()  # ids whose tool.called was emitted
        self._finished: set[str] = set()  # ids whose result was emitted
        self._legacy: dict[str, tuple[str, Any]] = {}  # call id -> (tool name, what began it)
        self._legacy_stream = False
        self._state: str | None = None  # "completed" or "failed" once the final event came
        self._error: str | None = None

    @property
    def thread_usage(self) -> ThreadUsage | None:
        """The thread's totals after this run: give them to the next turn's parser."""
        if self.session_id and self._running is not None:
            return ThreadUsage(self.session_id, dict(self._running))
        return self._before

    def handle(self, kind: str | None, obj: dict[str, Any]) -> list[Event]:
        if kind is None and isinstance(obj.get("msg"), dict):
            self._legacy_stream = True
            return self._legacy_msg(obj["msg"], obj)
        if kind in ("thread.started", "session.created"):
            self.session_id = (
                as_str(obj.get("thread_id")) or as_str(obj.get("session_id")) or self.session_id
            )
        elif kind in ("item.started", "item.updated", "item.completed"):
            return self._item(kind, obj)
        elif kind == "turn.completed":
            self._state, self._error = "completed", None
            events = self._usage(as_dict(obj.get("usage")))
            return [*events, self.raw(kind, obj)]
        elif kind == "turn.failed":
            self._state = "failed"
            self._error = (
                text_of(as_dict(obj.get("error")).get("message") or obj.get("error"))
                or "turn failed"
            )
        elif kind == "error":
            self._error = text_of(obj.get("message")) or "codex reported an error"
            if self._state == "completed":
                self._state = "failed"  # an error after the end still makes the turn fail
        return [self.raw(kind, obj)]

    # -- the item stream -----------------------------------------------------------------------

    def _item(self, kind: str, obj: dict[str, Any]) -> list[Event]:
        item = as_dict(obj.get("item"))
        itype = as_str(item.get("type")) or as_str(item.get("item_type"))
        iid = as_str(item.get("id")) or ""
        done = kind == "item.completed"
        if itype in ("agent_message", "assistant_message"):
            text = as_str(item.get("text"))
            return [self.assistant(text)] if done and text is not None else [self.raw(kind, obj)]
        if itype == "command_execution":
            return self._command_item(iid, item, done) or [self.raw(kind, obj)]
        if itype == "file_change":
            return self._file_change_item(iid, item, done) or [self.raw(kind, obj)]
        if itype in ("mcp_tool_call", "web_search", "collab_tool_call"):
            return self._tool_item(iid, itype, item, done) or [self.raw(kind, obj)]
        return [self.raw(kind, obj)]  # reasoning, todo_list, plan, error items, and new kinds

    def _call_once(self, iid: str, name: str, tool_input: Any, **extra: Any) -> list[Event]:
        if iid in self._called:
            return []
        self._called.add(iid)
        return [self.tool_called(iid, name, tool_input, **extra)]

    def _command_item(self, iid: str, item: dict[str, Any], done: bool) -> list[Event]:
        command = unwrap_shell(item.get("command"))
        events = self._call_once(iid, "command_execution", {"command": command})
        if not done or iid in self._finished:
            return events
        self._finished.add(iid)
        status = as_str(item.get("status"))
        code = as_int(item.get("exit_code"))
        output = text_of(item.get("aggregated_output"))
        failed = status in ("failed", "declined") or code not in (None, 0)
        if status == "declined":
            error: str | None = "the command was declined"
        else:
            error = output.strip() or (f"exit code {code}" if code not in (None, 0) else None)
        events.append(
            self.tool_result(iid, "command_execution", output, failed=failed, error=error)
        )
        if code is not None:
            events.append(self.command(command, code, output, call_id=iid))
        return events

    def _file_change_item(self, iid: str, item: dict[str, Any], done: bool) -> list[Event]:
        changes = [as_dict(c) for c in as_list(item.get("changes"))]
        described = [{"path": c.get("path"), "kind": _kind(c.get("kind"))} for c in changes]
        events = self._call_once(iid, "file_change", {"changes": described})
        if not done or iid in self._finished:
            return events
        self._finished.add(iid)
        failed = as_str(item.get("status")) != "completed"
        events.append(self.tool_result(iid, "file_change", {"changes": described}, failed=failed))
        if not failed:
            paths: list[Any] = []
            for c in changes:
                paths.append(c.get("path"))
                paths.append(as_dict(c.get("kind")).get("move_path"))
            events += self.files_changed(paths)
        return events

    def _tool_item(self, iid: str, itype: str, item: dict[str, Any], done: bool) -> list[Event]:
        extra: dict[str, Any] = {}
        if itype == "mcp_tool_call":
            # <server>.<tool>, as an MCP call is named in every harness.
            name = mcp_name(as_str(item.get("tool")) or "mcp_tool_call", as_str(item.get("server")))
            tool_input: Any = item.get("arguments")
            extra["server"] = item.get("server")
        elif itype == "web_search":
            name, tool_input = (
                "web_search",
                {"query": item.get("query"), "action": item.get("action")},
            )
        else:
            name = as_str(item.get("tool")) or itype
            tool_input = {
                "prompt": item.get("prompt"),
                "receiver_thread_ids": item.get("receiver_thread_ids"),
            }
        events = self._call_once(iid, name, tool_input, **extra)
        if not done or iid in self._finished:
            return events
        self._finished.add(iid)
        error = text_of(as_dict(item.get("error")).get("message")) or None
        failed = as_str(item.get("status")) == "failed" or error is not None
        result = as_dict(item.get("result"))
        output: Any = result.get("structured_content")
        if output is None and result:
            output = text_of(result.get("content"))
        elif output is None and itype == "collab_tool_call":
            output = item.get("agents_states")
        events.append(self.tool_result(iid, name, output, failed=failed, error=error, **extra))
        return events

    def _usage(self, reported: dict[str, Any]) -> list[Event]:
        now = {k: reported[k] for k in _USAGE_KEYS if isinstance(reported.get(k), (int, float))}
        if not now:
            return []
        before = self._running
        if before is None and self._before and self._before.thread_id == self.session_id:
            before = dict(self._before.totals)
        added = difference(now, before)
        self._running = now
        return self.usage.record(usage_event(**added))

    # -- the older msg stream ------------------------------------------------------------------

    def _legacy_msg(self, msg: dict[str, Any], obj: dict[str, Any]) -> list[Event]:
        kind = as_str(msg.get("type"))
        cid = as_str(msg.get("call_id")) or ""
        if kind == "session_configured":
            self.session_id = as_str(msg.get("session_id")) or self.session_id
        elif kind == "agent_message" and isinstance(msg.get("message"), str):
            return [self.assistant(msg["message"])]
        elif kind == "exec_command_begin":
            command = unwrap_shell(msg.get("command"))
            self._legacy[cid] = ("command_execution", command)
            return self._call_once(cid, "command_execution", {"command": command}) or [
                self.raw(kind, obj)
            ]
        elif kind == "exec_command_end":
            return self._legacy_command_end(cid, msg) or [self.raw(kind, obj)]
        elif kind == "patch_apply_begin":
            paths = _legacy_patch_paths(msg.get("changes"))
            self._legacy[cid] = ("file_change", paths)
            described = [{"path": p} for p in paths]
            return self._call_once(cid, "file_change", {"changes": described}) or [
                self.raw(kind, obj)
            ]
        elif kind == "patch_apply_end":
            _, paths = self._legacy.pop(cid, ("file_change", []))
            ok = msg.get("success") is True
            output = "\n".join(
                s for s in (as_str(msg.get("stdout")), as_str(msg.get("stderr"))) if s
            )
            events = [self.tool_result(cid, "file_change", output, failed=not ok)]
            return events + (self.files_changed(paths) if ok else [])
        elif kind == "mcp_tool_call_begin":
            call = as_dict(msg.get("invocation"))
            name = mcp_name(as_str(call.get("tool")) or "mcp_tool_call", as_str(call.get("server")))
            self._legacy[cid] = (name, call)
            return self._call_once(cid, name, call.get("arguments"), server=call.get("server")) or [
                self.raw(kind, obj)
            ]
        elif kind == "mcp_tool_call_end":
            call = as_dict(msg.get("invocation"))
            name = (mcp_name(as_str(call.get("tool")) or "", as_str(call.get("server")))
                    if as_str(call.get("tool")) else self._legacy.pop(cid, ("mcp_tool_call", None))[0])
            result = as_dict(msg.get("result"))
            if "Err" in result:
                return [
                    self.tool_result(
                        cid,
                        name,
                        None,
                        failed=True,
                        error=text_of(result["Err"]),
                        server=call.get("server"),
                    )
                ]
            answer = as_dict(result.get("Ok", result))
            failed = answer.get("isError") is True or answer.get("is_error") is True
            content = answer.get("structuredContent", answer.get("structured_content"))
            content = text_of(answer.get("content")) if content is None else content
            return [self.tool_result(cid, name, content, failed=failed, server=call.get("server"))]
        elif kind == "token_count":
            return self._legacy_tokens(msg) + [self.raw(kind, obj)]
        elif kind == "task_complete":
            self._state, self._error = "completed", None
            last = as_str(msg.get("last_agent_message"))
            if last is not None and self.message is None:
                return [self.assistant(last), self.raw(kind, obj)]
        elif kind == "error":
            self._error = text_of(msg.get("message")) or "codex reported an error"
            if self._state == "completed":
                self._state = "failed"
        elif kind == "turn_aborted":
            self._state = "failed"
            self._error = f"turn aborted: {text_of(msg.get('reason')) or 'no reason given'}"
        return [self.raw(kind, obj)]

    def _legacy_command_end(self, cid: str, msg: dict[str, Any]) -> list[Event]:
        _, began = self._legacy.pop(cid, ("command_execution", None))
        command = began if isinstance(began, str) else unwrap_shell(msg.get("command"))
        code = as_int(msg.get("exit_code"))
        output = as_str(msg.get("aggregated_output"))
        if output is None:
            output = "\n".join(
                s for s in (as_str(msg.get("stdout")), as_str(msg.get("stderr"))) if s
            )
        events = self._call_once(cid, "command_execution", {"command": command})
        events.append(
            self.tool_result(cid, "command_execution", output, failed=code not in (None, 0))
        )
        events.append(self.command(command, code, output, call_id=cid))
        return events

    def _legacy_tokens(self, msg: dict[str, Any]) -> list[Event]:
        info = as_dict(msg.get("info"))
        total = as_dict(info.get("total_token_usage"))
        if total:  # a running total: record what it added
            return self._usage(total)
        # The oldest builds reported each model response's own figures.
        figures = {k: msg[k] for k in _USAGE_KEYS if isinstance(msg.get(k), (int, float))}
        return self.usage.record(usage_event(**figures)) if figures else []

    # -- the end -------------------------------------------------------------------------------

    def end(self, exit_code: int | None) -> TurnEnd:
        usage = self.usage.totals()
        if self._state == "completed":
            if exit_code not in (0, None):
                error = f"codex exited with code {exit_code} after completing its turn"
                return TurnEnd(
                    "failed", message=self.message, error=error, resume=self.session_id, usage=usage
                )
            return TurnEnd("completed", message=self.message, resume=self.session_id, usage=usage)
        if self._state == "failed":
            return TurnEnd(
                "failed",
                message=self.message,
                error=self._error,
                resume=self.session_id,
                usage=usage,
            )
        final = "task_complete" if self._legacy_stream else "turn.completed"
        return self.ended_early(final, exit_code, self._error)


def _kind(kind: Any) -> Any:
    return as_str(kind) or as_str(as_dict(kind).get("type")) or kind


def _legacy_patch_paths(changes: Any) -> list[str]:
    paths: list[str] = []
    for path, change in as_dict(changes).items():
        paths.append(path)
        move = as_str(as_dict(as_dict(change).get("update")).get("move_path"))
        if move:
            paths.append(move)
    return paths


def codex_credentials(env: Mapping[str, str]) -> dict[str, str]:
    """Variables to add for codex to sign in: ``codex exec`` (0.171) sends ``CODEX_API_KEY`` and
    ignores ``OPENAI_API_KEY``, so an ``OPENAI_API_KEY`` alone is passed as ``CODEX_API_KEY``."""
    if not env.get("CODEX_API_KEY") and env.get("OPENAI_API_KEY"):
        return {"CODEX_API_KEY": env["OPENAI_API_KEY"]}
    return {}


def codex_command(
    *,
    prompt_file: str | None = None,
    prompt: str | None = None,
    model: str | None = None,
    system_prompt: str | None = None,
    resume: str | None = None,
    executable: str = "codex",
) -> Invocation:
    """The argv of one unattended ``codex exec`` turn.

    ``--dangerously-bypass-approvals-and-sandbox``: no approvals, and no codex sandbox nested
    inside the trial's own (codex's Linux sandbox cannot start inside most containers);
    ``--skip-git-repo-check``: the workspace need not be a git repository. The prompt file is
    read on stdin (``-``); ``resume`` continues that thread with ``codex exec resume <id>``;
    ``system_prompt`` goes to ``~/.codex/AGENTS.md``, codex's user-wide instructions.
    """
    stdin, text = prompt_source(prompt_file, prompt)
    argv = [
        executable,
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
    ]
    if model:
        argv += ["--model", model]
    if resume:
        argv += ["resume", resume]
    argv += ["-"] if text is None else ["--", text]
    files = (SetupFile("home", ".codex/AGENTS.md", system_prompt),) if system_prompt else ()
    return Invocation(tuple(argv), stdin=stdin, files=files)


CODEX = CliInfo(
    name="codex",
    title="OpenAI Codex",
    executable="codex",
    package="npm: @openai/codex",
    version_argv=("codex", "--version"),
    credentials=(("CODEX_API_KEY",), ("OPENAI_API_KEY",)),
    secret_variables=("CODEX_API_KEY", "OPENAI_API_KEY"),
    credential_files=(".codex/auth.json",),
    notes=(
        "codex exec signs in with CODEX_API_KEY (it ignores OPENAI_API_KEY): an OPENAI_API_KEY "
        "alone is passed to it as CODEX_API_KEY. A ChatGPT sign-in lives in ~/.codex/auth.json: "
        "copy it into the trial's HOME to use one.",
        "Runs with --dangerously-bypass-approvals-and-sandbox: codex neither asks nor sandboxes, "
        "so run it in a sandbox.",
        "Each turn is a new process continuing the thread with `codex exec resume <id>`; threads "
        "are stored under the trial's HOME (~/.codex/sessions).",
        "Codex reports tokens but no cost.",
    ),
)
