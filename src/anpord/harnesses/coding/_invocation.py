"""How a coding-agent CLI is started for one turn, and what a user needs to know about it.

A command builder returns an ``Invocation``: the argv of a non-interactive, unattended run
(machine-readable stream on stdout, permission to act in its workspace without asking, session
continuation), the file to feed on stdin (the prompt, which can be huge: it never goes through
argv when a file holds it), environment variables to add, and files to write first (instruction
files such as ``~/.codex/AGENTS.md``, for CLIs that take a system prompt no other way).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "CliInfo",
    "Invocation",
    "PromptError",
    "SetupFile",
    "SignIn",
    "parse_version",
    "prompt_source",
]

# A longer argument risks the kernel's per-argument limit (128 KiB); it goes through a file.
ARG_LIMIT = 100_000


class PromptError(ValueError):
    """A command cannot be built: no prompt was given, or a prompt cannot travel as an argument."""


@dataclass(frozen=True)
class SetupFile:
    """A file to write before the run: ``path`` is relative to the trial's ``home`` (its ``$HOME``)
    or to its ``workspace``. Instruction files go in the home, so they never show in the
    workspace's diff."""

    root: Literal["home", "workspace"]
    path: str
    text: str


@dataclass(frozen=True)
class Invocation:
    """One run of a CLI. ``stdin`` is the path of a file to connect to its standard input (None:
    give it an empty one, such as /dev/null — never a closed descriptor, which some CLIs fail on)."""

    argv: tuple[str, ...]
    stdin: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    files: tuple[SetupFile, ...] = ()

    def shell(self) -> str:
        """The invocation as one shell command line (environment, argv, stdin redirect)."""
        parts = [f"{k}={shlex.quote(v)}" for k, v in self.env.items()]
        parts += [shlex.quote(a) for a in self.argv]
        if self.stdin:
            parts += ["<", shlex.quote(self.stdin)]
        return " ".join(parts)


@dataclass(frozen=True)
class CliInfo:
    """What ``anpord harnesses`` shows about a CLI.

    ``credentials``: each entry is a set of environment variables that together let the CLI sign
    in (any one entry is enough); declare the ones you use as variant secrets so they reach the
    sandbox. ``version_argv`` prints its version (read it with ``parse_version``).
    """

    name: str
    title: str
    executable: str
    package: str
    version_argv: tuple[str, ...]
    credentials: tuple[tuple[str, ...], ...]
    notes: tuple[str, ...] = ()
    # Files under HOME that hold a stored sign-in (copied in by a profile), instead of a variable.
    credential_files: tuple[str, ...] = ()
    # The CLI's own key variables: passed to its trials as secrets (redacted) when set.
    secret_variables: tuple[str, ...] = ()

    @property
    def install_command(self) -> str:
        """How to install it: ``npm install -g @openai/codex`` for an npm package."""
        kind, _, name = self.package.partition(": ")
        return f"npm install -g {name}" if kind == "npm" and name else self.package


@dataclass(frozen=True)
class SignIn:
    """What signs a CLI in for one trial, when that depends on the model (OpenCode's provider).
    ``alternatives``: sets of variables, any one set enough (empty: nothing to check);
    ``signed_in``: a stored sign-in or a key in the CLI's own configuration does it already;
    ``about`` completes the error (`` for provider 'x' (model x/m)``)."""

    about: str
    alternatives: tuple[tuple[str, ...], ...]
    signed_in: bool = False


def prompt_source(prompt_file: str | None, prompt: str | None) -> tuple[str | None, str | None]:
    """``(stdin_path, argv_text)``: the prompt file goes on stdin when there is one; otherwise the
    text travels as an argument, if it can."""
    if prompt_file:
        return str(prompt_file), None
    if prompt is None:
        raise PromptError("a coding-agent run needs a prompt: give prompt_file or prompt")
    if "\0" in prompt:
        raise PromptError("a prompt holding a NUL byte cannot be an argument: give prompt_file")
    if len(prompt.encode("utf-8")) > ARG_LIMIT:
        raise PromptError(
            f"a prompt longer than {ARG_LIMIT} bytes cannot be an argument: give prompt_file"
        )
    return None, prompt


_VERSION = re.compile(r"\b(\d+\.\d+(?:\.\d+)?(?:[-+][0-9A-Za-z.-]+)?)\b")


def parse_version(output: str) -> str | None:
    """The first version number in a ``--version`` output: ``2.1.3 (Claude Code)`` → ``2.1.3``,
    ``codex-cli 0.46.0`` → ``0.46.0``."""
    m = _VERSION.search(output or "")
    return m.group(1) if m else None
