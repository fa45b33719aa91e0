"""Which program a harness spec runs, when one can be named before the run: a command spec's
first program (``command:claude -p ...`` → ``claude``), a coding agent's CLI (``codex``). The
CLI uses it to say up front that a variant's program is not installed here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["CODING_AGENTS", "program_of", "spec_head"]

# The coding-agent CLIs, by exact name (or ``name:/path/to/binary``); see harnesses/coding.
CODING_AGENTS = ("claude", "codex", "gemini", "opencode")


def spec_head(spec: str) -> str:
    """The name a harness spec is resolved by: ``python`` for ``python:pkg.mod:attr``,
    ``http`` for ``http://host/path``, ``claude`` for ``claude`` and ``claude:/bin/claude``."""
    return spec.partition(":")[0]


def program_of(spec: str, options: Mapping[str, Any]) -> str | None:
    """The program ``spec`` starts by name (looked up on PATH), or None when it cannot be told
    (a path, a variable, a shell construct, several commands) or there is none (python:, http)."""
    head = spec_head(spec)
    if head == "command":
        return _first_program(spec.removeprefix("command:"))
    if spec in CODING_AGENTS and "executable" not in options:
        return spec
    return None


SHELL_WORDS = frozenset(
    "cd echo printf true false test [ [[ exec eval export source . set unset if for while until case "
    "{ ( ! time command builtin read exit return shift trap type ulimit umask wait".split()
)


def _first_program(command: str) -> str | None:
    """The program a shell command line starts with, when it can be told without running it:
    ``(setsid prog …); …`` and ``{ prog; }`` start with ``setsid``/``prog``, not ``(setsid``.
    None for a path, a variable, an assignment, a builtin or keyword (the shell decides), or a
    line the shell lexer cannot read."""
    import shlex

    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        for word in lexer:
            if word in _GROUPING:
                continue  # a subshell, a group or a negation: its first command decides
            if word.strip("();&|<>") == "":
                return None  # starts with an operator or a redirection: leave it to the shell
            if word.isdigit():
                return None  # a redirection's descriptor (``2>/dev/null prog``)
            if "/" in word or "$" in word or "=" in word or "`" in word or word in SHELL_WORDS:
                return None
            return None if _more_commands(lexer) or _later_lines(command) else word
    except ValueError:
        return None
    return None


# Operators after which another command runs whether or not the first program started (after
# ``&&`` none does: a missing first program still ends the line with 127 and nothing printed).
_THEN_ANOTHER = frozenset({";", "||", "|", "&", "|&"})


def _more_commands(lexer: Any) -> bool:
    """Whether the rest of the line runs another command after one of ``_THEN_ANOTHER``."""
    after = False
    for word in lexer:
        if after and word not in ("}", ")", ";", "&"):
            return True
        after = after or word in _THEN_ANOTHER
    return False


def _later_lines(command: str) -> bool:
    return any(line.strip() for line in command.strip().splitlines()[1:])


# Words that open a compound command before its first program (punctuation_chars keeps "((" one
# token: arithmetic, not a program).
_GROUPING = frozenset({"(", "{", "!"})
