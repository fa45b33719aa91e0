"""OpenCode (``opencode run --format json``).

The stream: every line carries ``sessionID`` and, for parts, a ``part`` object. ``step_start``
and ``step_finish`` bracket each model call (``step_finish`` holds its ``reason``, ``tokens`` and
``cost``); ``text`` is a finished text part; ``reasoning`` a finished thinking part (with
``--thinking``); ``tool_use`` a finished tool call (``part.tool``, ``part.callID``,
``part.state`` with ``status`` ``completed``/``error``, ``input``, ``output``, ``error``,
``metadata``); ``error`` a session error; newer versions end with ``done``.

Choices made here:

- One ``tool_use`` line is both the ``tool.called`` and the ``tool.result``: opencode prints a
  tool call only once it has finished.
- **The end**: ``done``; on versions without it, a last ``step_finish`` whose reason is not
  ``tool-calls`` (the model stopped by itself) with no step opened after it. Anything else is a
  stream cut short: failed. An ``error`` event fails the turn.
- **Shell commands**: the exit code is the bash tool's ``metadata.exit`` (None when it has none);
  a non-zero one makes the ``tool.result`` failed (opencode itself says ``completed``). The output
  is ``metadata.output``, what the command printed (``(no output)``, opencode's text for nothing
  printed, is "").
- **File changes** come from completed ``write``, ``edit``, ``multiedit``, ``patch`` and
  ``apply_patch`` calls.
- **Usage** is summed over ``step_finish`` lines (each holds one model call's figures):
  ``input`` plus cache reads and writes, ``output`` plus ``reasoning``. OpenCode prices calls from
  its model list and reports ``cost: 0`` for a model it has no price for, so a 0 next to tokens
  is recorded as None.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...events import Event
from .._stream import TurnEnd
from ._base import JsonStreamParser, as_dict, as_int, as_list, as_str, patch_paths, text_of
from ._invocation import CliInfo, Invocation, SetupFile, SignIn, prompt_source
from ._usage import usage_event

if TYPE_CHECKING:
    from ...sandboxes._protocol import SandboxFiles

__all__ = [
    "OPENCODE",
    "OpenCodeStreamParser",
    "configured_base_urls",
    "opencode_command",
    "provider_keys",
    "provider_sign_in",
]

SHELL_TOOLS = {"bash"}
FILE_TOOLS = {"write", "edit", "multiedit"}
PATCH_TOOLS = {"patch", "apply_patch"}
_TOOL_STEP = {"tool-calls", "tool_calls"}
# Approve every tool: the trial's sandbox is the isolation (explicit denials still hold).
PERMISSIONS = json.dumps({"*": "allow"})


class OpenCodeStreamParser(JsonStreamParser):
    """Parses one ``opencode run --format json`` run."""

    cli = "opencode"

    def __init__(self, *, workspace: str | os.PathLike[str] | None = None):
        super().__init__(workspace=workspace)
        self._done = False
        self._step_open = False
        self._last_reason: str | None = None
        self._error: str | None = None

    def handle(self, kind: str | None, obj: dict[str, Any]) -> list[Event]:
        part = as_dict(obj.get("part"))
        sid = as_str(obj.get("sessionID")) or as_str(part.get("sessionID"))
        if sid:
            self.session_id = sid
        if kind == "text":
            text = as_str(part.get("text"))
            if text is not None and text.strip():
                return [self.assistant(text)]
        elif kind == "tool_use":
            return self._tool(part) or [self.raw(kind, obj)]
        elif kind == "step_start":
            self._step_open = True
        elif kind == "step_finish":
            self._step_open = False
            self._last_reason = as_str(part.get("reason"))
            return [*self._usage(part), self.raw(kind, obj)]
        elif kind == "error":
            self._error = _error_text(obj.get("error"))
        elif kind == "done":
            self._done = True
        return [self.raw(kind, obj)]

    def _tool(self, part: dict[str, Any]) -> list[Event]:
        state = as_dict(part.get("state"))
        status = as_str(state.get("status"))
        if status not in ("completed", "error"):
            return []
        cid = as_str(part.get("callID")) or as_str(part.get("id")) or ""
        name = as_str(part.get("tool")) or "unknown"
        tool_input = state.get("input")
        params = as_dict(tool_input)
        metadata = as_dict(state.get("metadata"))
        failed = status == "error"
        output = state.get("output")
        error = text_of(state.get("error")) or None
        if name in SHELL_TOOLS:
            shown = as_str(metadata.get("output"))
            text = _printed(shown if shown is not None else text_of(output))
            code = as_int(metadata.get("exit"))
            failed = failed or code not in (None, 0)
            if failed and error is None:
                error = text.strip() or f"exit code {code}"
            return [
                self.tool_called(cid, name, tool_input),
                self.tool_result(cid, name, text, failed=failed, error=error),
                self.command(text_of(params.get("command")), code, text, call_id=cid),
            ]
        events = [
            self.tool_called(cid, name, tool_input),
            self.tool_result(cid, name, output, failed=failed, error=error),
        ]
        if not failed and name in FILE_TOOLS:
            events += self.files_changed([params.get("filePath") or params.get("file_path")])
        elif not failed and name in PATCH_TOOLS:
            files = [as_dict(f) for f in as_list(metadata.get("files"))]
            paths: list[Any] = [p for f in files for p in (f.get("filePath"), f.get("movePath"))]
            events += self.files_changed(paths or patch_paths(text_of(params.get("patchText"))))
        return events

    def _usage(self, part: dict[str, Any]) -> list[Event]:
        tokens = part.get("tokens")
        if not isinstance(tokens, dict):
            return self.usage.record(usage_event(cost=part.get("cost")))
        cache = as_dict(tokens.get("cache"))
        fresh, out = as_int(tokens.get("input")), as_int(tokens.get("output"))
        read, write = as_int(cache.get("read")) or 0, as_int(cache.get("write")) or 0
        reasoning = as_int(tokens.get("reasoning")) or 0
        return self.usage.record(
            usage_event(
                input_tokens=None if fresh is None else fresh + read + write,
                output_tokens=None if out is None else out + reasoning,
                cost=part.get("cost"),
                cached_input_tokens=read,
                cache_write_input_tokens=write,
                reasoning_output_tokens=reasoning,
            )
        )

    def end(self, exit_code: int | None) -> TurnEnd:
        usage = self.usage.totals()
        if self._error:
            return TurnEnd(
                "failed",
                message=self.message,
                error=self._error,
                resume=self.session_id,
                usage=usage,
            )
        finished = self._done or (
            self._last_reason is not None
            and not self._step_open
            and self._last_reason not in _TOOL_STEP
        )
        if not finished:
            return self.ended_early("done", exit_code)
        if self._last_reason == "error":
            error = "the model's last step ended in an error"
            return TurnEnd(
                "failed", message=self.message, error=error, resume=self.session_id, usage=usage
            )
        if exit_code not in (0, None):
            error = f"opencode exited with code {exit_code} after finishing its turn"
            return TurnEnd(
                "failed", message=self.message, error=error, resume=self.session_id, usage=usage
            )
        return TurnEnd("completed", message=self.message, resume=self.session_id, usage=usage)


# What opencode's bash tool shows for a command that printed nothing: not the command's output.
_NO_OUTPUT = "(no output)"


def _printed(text: str) -> str:
    return "" if text.strip() == _NO_OUTPUT else text


def _error_text(error: Any) -> str:
    err = as_dict(error)
    data = as_dict(err.get("data"))
    message = as_str(data.get("message")) or as_str(err.get("message"))
    name = as_str(err.get("name"))
    if message and name:
        return f"{name}: {message}"
    return message or name or text_of(error) or "opencode reported an error"


# The variables opencode's built-in providers sign in with (its models.dev list), by provider id.
PROVIDER_KEYS: dict[str, tuple[str, ...]] = {
    "anthropic": ("ANTHROPIC_API_KEY",),
    "openai": ("OPENAI_API_KEY",),
    "google": ("GOOGLE_GENERATIVE_AI_API_KEY", "GEMINI_API_KEY"),
    "openrouter": ("OPENROUTER_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "xai": ("XAI_API_KEY",),
}
_ENV_REF = re.compile(r"^\{env:([A-Za-z_][A-Za-z0-9_]*)\}$")
# Where opencode reads its configuration, under the trial's HOME and in its workspace.
CONFIG_FILES = (
    ("home", ".config/opencode/opencode.json"),
    ("home", ".config/opencode/opencode.jsonc"),
    ("workspace", "opencode.json"),
    ("workspace", "opencode.jsonc"),
)
AUTH_FILE = ".local/share/opencode/auth.json"


def provider_of(model: str | None) -> str | None:
    """``anthropic/claude-sonnet-4-5`` → ``anthropic``; None without a provider."""
    if not model or "/" not in model:
        return None
    return model.split("/", 1)[0].strip() or None


def provider_keys(model: str | None) -> tuple[str, ...]:
    """The variables the model's provider signs in with: a built-in provider's, else the
    ``<PROVIDER>_API_KEY`` that models.dev names them by; every known one without a provider."""
    provider = provider_of(model)
    if provider is None:
        return tuple(dict.fromkeys(k for keys in PROVIDER_KEYS.values() for k in keys))
    known = PROVIDER_KEYS.get(provider)
    return known or (re.sub(r"[^A-Za-z0-9]", "_", provider).upper() + "_API_KEY",)


async def provider_sign_in(model: str | None, home: Path, workspace: Path, files: SandboxFiles) -> SignIn:
    """Follows the model's provider: its entry in an ``opencode.json`` of the trial (``apiKey``
    ``{env:NAME}`` names the variable, a literal key or none needs nothing), a stored
    ``auth.json`` sign-in for it, else the provider's own variables. The trial's files are read
    through ``files`` (its sandbox)."""
    provider = provider_of(model)
    if provider is None:
        any_key = tuple((k,) for k in provider_keys(None))
        return SignIn("", any_key, signed_in=bool(await _read_json(files, home / AUTH_FILE)))
    about = f" for provider {provider!r} (model {model})"
    entry = await _configured(provider, home, workspace, files)
    if entry is not None:
        key = as_dict(entry.get("options")).get("apiKey")
        ref = _ENV_REF.match(key.strip()) if isinstance(key, str) else None
        if ref:
            return SignIn(about, ((ref.group(1),),))
        if key is not None or provider not in PROVIDER_KEYS:
            return SignIn(about, ())  # a key in the file, or a provider that needs none
    if provider in await _read_json(files, home / AUTH_FILE):
        return SignIn(about, (), signed_in=True)
    return SignIn(about, tuple((k,) for k in provider_keys(model)))


async def configured_base_urls(home: Path, workspace: Path, files: SandboxFiles) -> set[str]:
    """The providers whose ``options.baseURL`` the trial's own ``opencode.json`` files set (the
    model proxy leaves those endpoints alone), read through ``files`` (the trial's sandbox)."""
    roots = {"home": home, "workspace": workspace}
    found: set[str] = set()
    for key, rel in CONFIG_FILES:
        config = await _read_json(files, roots[key] / rel)
        for name, entry in as_dict(config.get("provider")).items():
            if as_dict(as_dict(entry).get("options")).get("baseURL"):
                found.add(name)
    return found


async def _configured(provider: str, home: Path, workspace: Path, files: SandboxFiles) -> dict[str, Any] | None:
    roots = {"home": home, "workspace": workspace}
    for root, rel in CONFIG_FILES:
        config = await _read_json(files, roots[root] / rel)
        entry = as_dict(config.get("provider")).get(provider)
        if isinstance(entry, dict):
            return entry
    return None


async def _read_json(files: SandboxFiles, path: Path) -> dict[str, Any]:
    try:
        text = (await files.read_file(path)).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        # JSONC: drop whole-line comments and trailing commas, then try once more.
        text = re.sub(r"(?m)^\s*//.*$", "", text)
        text = re.sub(r",(\s*[}\]])", r"\1", text)
        try:
            value = json.loads(text)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def opencode_command(
    *,
    prompt_file: str | None = None,
    prompt: str | None = None,
    model: str | None = None,
    system_prompt: str | None = None,
    resume: str | None = None,
    executable: str = "opencode",
) -> Invocation:
    """The argv of one unattended ``opencode run`` turn.

    The prompt file is read on stdin (``opencode run`` reads stdin when it is not a terminal,
    and takes it exactly, where a message given as arguments is re-quoted); ``model`` is
    ``provider/model``; ``resume`` continues that session (``--session``); ``OPENCODE_PERMISSION``
    allows every tool without asking; ``system_prompt`` goes to ``~/.config/opencode/AGENTS.md``,
    opencode's user-wide rules.
    """
    stdin, text = prompt_source(prompt_file, prompt)
    argv = [executable, "run", "--format", "json"]
    if model:
        argv += ["--model", model]
    if resume:
        argv += ["--session", resume]
    if text is not None:
        argv += ["--", text]
    files = (
        (SetupFile("home", ".config/opencode/AGENTS.md", system_prompt),) if system_prompt else ()
    )
    env = {"OPENCODE_PERMISSION": PERMISSIONS, "OPENCODE_DISABLE_AUTOUPDATE": "1"}
    return Invocation(tuple(argv), stdin=stdin, env=env, files=files)


OPENCODE = CliInfo(
    name="opencode",
    title="OpenCode",
    executable="opencode",
    package="npm: opencode-ai",
    version_argv=("opencode", "--version"),
    credentials=(
        ("ANTHROPIC_API_KEY",),
        ("OPENAI_API_KEY",),
        ("GEMINI_API_KEY",),
        ("OPENROUTER_API_KEY",),
        ("GROQ_API_KEY",),
    ),
    credential_files=(".local/share/opencode/auth.json",),
    notes=(
        "Give the model as provider/model (anthropic/claude-sonnet-4-5); the provider's own key "
        "variable signs in (a provider of your own: the {env:NAME} of its apiKey in opencode.json). "
        "Keys saved with `opencode auth login` live in ~/.local/share/opencode/auth.json: copy it "
        "into the trial's HOME to use them.",
        "OPENCODE_PERMISSION allows every tool without asking, so run it in a sandbox; a "
        "permission your own opencode.json denies stays denied.",
        "Each turn is a new process continuing the session with --session <id>; sessions are "
        "stored under the trial's HOME (~/.local/share/opencode).",
        "Cost comes from opencode's model price list; a model it has no price for reports none.",
    ),
)
