"""Coding-agent CLIs as harness parts: Claude Code, OpenAI Codex, Gemini CLI and OpenCode.

For each CLI: a ``StreamParser`` turning its JSON stream into anpord events and a ``TurnEnd``,
a command builder giving the argv (and stdin, environment, instruction files) of one unattended
turn, and a ``CliInfo`` for users. ``CODING_CLIS`` maps each CLI's name to the three::

    cli = CODING_CLIS["codex"]
    run = cli.command(prompt_file=prompt_path, model="gpt-5-codex", resume=previous.resume)
    parser = cli.parser(workspace=workspace)
    for line in stdout_lines:
        emit_all(parser.feed(line))
    end = parser.finish(exit_code)

What each stream maps to is documented in docs/coding-agents.md.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._invocation import CliInfo, Invocation, PromptError, SetupFile, SignIn, parse_version
from .claude import CLAUDE, ClaudeStreamParser, claude_command
from .codex import CODEX, CodexStreamParser, ThreadUsage, codex_command, codex_credentials
from .gemini import GEMINI, GeminiStreamParser, gemini_command
from .opencode import (
    OPENCODE,
    OpenCodeStreamParser,
    configured_base_urls,
    opencode_command,
    provider_keys,
    provider_sign_in,
)

if TYPE_CHECKING:
    from ...sandboxes._protocol import SandboxFiles

__all__ = [
    "CLAUDE",
    "CODEX",
    "CODING_CLIS",
    "GEMINI",
    "OPENCODE",
    "ClaudeStreamParser",
    "CliInfo",
    "CodexStreamParser",
    "CodingCli",
    "GeminiStreamParser",
    "Invocation",
    "OpenCodeStreamParser",
    "PromptError",
    "SetupFile",
    "SignIn",
    "ThreadUsage",
    "claude_command",
    "codex_command",
    "gemini_command",
    "opencode_command",
    "own_secrets",
    "parse_version",
]


@dataclass(frozen=True)
class CodingCli:
    """One CLI's parts. ``parser(workspace=...)`` makes a fresh parser per run; ``command(...)``
    takes ``prompt_file``, ``prompt``, ``model``, ``system_prompt``, ``resume`` (keywords)."""

    info: CliInfo
    parser: Callable[..., Any]
    command: Callable[..., Invocation]
    # Variables to add to a turn's environment, from the environment it has (a key the CLI
    # reads under another name); None: nothing to add.
    credential_env: Callable[[Mapping[str, str]], dict[str, str]] | None = None
    # await sign_in(model, home, workspace, files): what signs it in for this model, when that
    # depends on the model, reading the trial's files through ``files`` (its sandbox); None:
    # any one of ``info.credentials`` (or a stored sign-in) does.
    sign_in: Callable[[str | None, Path, Path, SandboxFiles], Awaitable[SignIn]] | None = None
    # await own_endpoints(home, workspace, files): the providers whose endpoint the CLI's own
    # configuration sets, which the model proxy leaves alone; None: the CLI has no such configuration.
    own_endpoints: Callable[[Path, Path, SandboxFiles], Awaitable[set[str]]] | None = None

    @property
    def name(self) -> str:
        return self.info.name


CODING_CLIS: dict[str, CodingCli] = {
    cli.name: cli
    for cli in (
        CodingCli(CLAUDE, ClaudeStreamParser, claude_command),
        CodingCli(CODEX, CodexStreamParser, codex_command, codex_credentials),
        CodingCli(GEMINI, GeminiStreamParser, gemini_command),
        CodingCli(OPENCODE, OpenCodeStreamParser, opencode_command, sign_in=provider_sign_in,
                  own_endpoints=configured_base_urls),
    )
}


def own_secrets(spec: str | None, model: str | None) -> tuple[str, ...]:
    """The key variables of the coding CLI a harness spec names (``claude``,
    ``codex:/opt/codex``), passed to its trials as secrets when set: OpenCode's are the model's
    provider's. Empty for any other harness."""
    cli = CODING_CLIS.get((spec or "").partition(":")[0])
    if cli is None:
        return ()
    if cli.name == "opencode":
        return provider_keys(model)
    return cli.info.secret_variables
