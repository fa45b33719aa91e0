"""Shell verifiers: ``command("pytest -q")`` checks a trial's workspace after the agent ran.

A verifier runs its command in the trial's sandbox, in the workspace, under ``bash -o pipefail``
— always, so a failing stage of a pipeline is never hidden behind a succeeding last stage (a
pipeline therefore needs no load-time refusal). Exit 0 passes. It is ``void`` — could not
measure, never a pass — only when the output shows the check did not really run (DESIGN §9):
exit 126/127, the command itself "not found" or "permission denied", its Python program not
starting ("No module named" from the interpreter, or as the first line of output), a test runner
that ran no test ("no tests ran", "collected 0 items", "Ran 0 tests", "0 tests", pytest exit 5),
or a command that is not valid bash. Phrases match whole and are ignored when other output shows
tests that did run. Any other non-zero exit is ``failed``, silent or not: a silent ``test -f x``
passes on exit 0 and fails on exit 1.

For ``a && b && c`` the message names the step that failed, found with a DEBUG trap rather than
by splitting the command (so quoting, heredocs and functions keep working).
"""

from __future__ import annotations

import re
import secrets
import shlex
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from .sandboxes._protocol import ExecResult, SandboxInstance

__all__ = ["CommandVerifier", "Verifier", "VerifierOutcome", "classify", "command"]

Status = Literal["passed", "failed", "void"]

_RAN_NOTHING = re.compile(
    r"\bno tests ran\b|\bcollected 0 items\b|\bran 0 tests?\b|\bno tests? (?:were )?found\b"
    r"|\bno tests (?:to run|executed)\b"
    r"|(?<![\w.,])0 tests?\b(?! (?:failed|failing|errored|errors?|skipped|passed|passing|succeeded|ok))",
    re.IGNORECASE,
)
# Evidence that some test did run: then a "0 tests" elsewhere (cargo's doc-tests, one empty
# package of many) is not "ran nothing".
_RAN_SOMETHING = re.compile(
    r"(?<![\w.])[1-9]\d* (?:passed|passing|failed|failing"
    r"|tests? (?:passed|ran|run|completed|succeeded))\b"
    r"|\bran [1-9]\d* tests?\b|\brunning [1-9]\d* tests?\b",
    re.IGNORECASE,
)
_NO_MODULE = re.compile(r"No module named [\w.'\"]+")
# `python -m X` with X missing: the interpreter itself says so, prefixed with its own path.
_INTERPRETER_NO_MODULE = re.compile(
    r"^\S*python[\d.]*: .*?(No module named [\w.'\"]+)", re.MULTILINE | re.IGNORECASE
)
_SYNTAX = re.compile(r"^bash: (?:-c: )?line \d+: (?:syntax error|unexpected EOF).*$", re.MULTILINE)
_SUMMARY = re.compile(
    r"\d+ (?:passed|failed|errors?)\b|\bran \d+ tests?\b|\btests? result\b", re.IGNORECASE
)
_WRAPPERS = frozenset({"env", "exec", "command", "time", "nohup", "builtin", "sudo"})
MESSAGE_WIDTH = 200


@dataclass(frozen=True)
class VerifierOutcome:
    name: str
    status: Status
    message: str  # one line
    result: ExecResult | None = None
    step: str | None = None  # the failing step of a compound command, when one is known

    @property
    def passed(self) -> bool:
        return self.status == "passed"


@runtime_checkable
class Verifier(Protocol):
    """What ``validate=`` accepts beside functions: ``await v.verify(sandbox)``."""

    name: str

    async def verify(self, sandbox: SandboxInstance) -> VerifierOutcome: ...


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MESSAGE_WIDTH else text[: MESSAGE_WIDTH - 1] + "…"


def _program(step: str) -> str | None:
    """The program a simple command runs: its first word after assignments and wrappers."""
    try:
        words = shlex.split(step)
    except ValueError:
        words = step.split()
    for word in words:
        if re.match(r"^[A-Za-z_]\w*=", word) or word in _WRAPPERS:
            continue
        return word
    return None


def _names_program(output: str, program: str | None, phrases: str) -> str | None:
    """The output line where the shell says ``program`` itself could not run, if any."""
    if not program:
        return None
    names = {re.escape(program), re.escape(program.rsplit("/", 1)[-1])}
    pattern = re.compile(
        rf"(?:^|: )(?:{'|'.join(names)}): (?:{phrases})\s*$", re.MULTILINE | re.IGNORECASE
    )
    m = pattern.search(output)
    if not m:
        return None
    start = output.rfind("\n", 0, m.start()) + 1
    return output[start : m.end()].strip()


def _missing_module(output: str) -> str | None:
    """The missing module when the check's own program could not start ("No module named X" from
    the interpreter, or as the first line with no test run) — not a test that failed on an import
    (that is the agent's code missing: a real failure)."""
    if _RAN_SOMETHING.search(output):
        return None
    if m := _INTERPRETER_NO_MODULE.search(output):
        return m.group(1)
    first = next((ln for ln in output.splitlines() if ln.strip()), "")
    m = _NO_MODULE.search(first)
    return m.group(0) if m else None


def _summary(result: ExecResult, failing: bool) -> str:
    lines = [ln.strip() for ln in result.output.splitlines() if ln.strip()]
    for line in reversed(lines):
        if _SUMMARY.search(line):
            return line
    err = [ln.strip() for ln in result.stderr.splitlines() if ln.strip()]
    if failing and err:
        return err[-1]
    return lines[-1] if lines else ""


def classify(
    cmd: str, result: ExecResult, step: str | None = None, timeout: float | None = None
) -> tuple[Status, str]:
    """Decide passed / failed / void for a finished command and say why, in one line."""
    output = result.output
    if result.timed_out:
        return "failed", f"timed out after {timeout:g}s" if timeout else "timed out"
    ran_nothing = _RAN_NOTHING.search(output)
    if ran_nothing and _RAN_SOMETHING.search(output):
        ran_nothing = None
    if result.exit_code == 0:
        if ran_nothing:
            return "void", f"ran no test ({ran_nothing.group(0)!r})"
        summary = _summary(result, False)
        return "passed", f"passed{': ' + summary if summary else ''}"
    code = result.exit_code
    shown = step and step.strip() != cmd.strip() and not re.match(r"exit\b", step)
    where = f" at `{step}`" if shown else ""
    program = _program(step or cmd)
    if code in (126, 127):
        cause = _names_program(
            output,
            program,
            "command not found|not found|no such file or directory|permission denied",
        ) or _summary(result, True)
        return "void", f"could not run{where} (exit {code}): {cause}"
    if m := _SYNTAX.search(result.stderr):
        return "void", f"the command is not valid bash: {m.group(0)}"
    if named := _names_program(output, program, "command not found|not found|permission denied"):
        return "void", f"could not run{where}: {named}"
    if missing := _missing_module(output):
        return "void", f"could not run{where}: {missing}"
    if ran_nothing or (code == 5 and program is not None and "pytest" in (step or cmd)):
        phrase = repr(ran_nothing.group(0)) if ran_nothing else "pytest exit 5"
        return "void", f"ran no test ({phrase})"
    summary = _summary(result, True)
    return "failed", f"exit {code}{where}{': ' + summary if summary else ''}"


def _script(cmd: str, nonce: str) -> str:
    """``cmd`` with a DEBUG trap recording the last steps; on failure one marker line on stderr
    names the failing one (the failing stage when the last step was a pipeline). The preamble is
    one line ending where ``cmd`` starts, so bash's line numbers in errors stay the user's."""
    report = (
        '__anpord_report() { local rc=$1 ps=("${@:2}") k i; trap - DEBUG; [ "$rc" -eq 0 ] && return; '
        'k=$(( ${#ps[@]} - 1 )); for (( i=${#ps[@]}-1; i>=0; i-- )); do [ "${ps[i]}" -ne 0 ] && { k=$i; break; }; done; '
        "i=$(( (__anpord_n - ${#ps[@]} + k) % 32 )); (( i < 0 )) && i=$(( i + 32 )); "
        f"printf '\\n{nonce}%s\\n' \"${{__anpord_s[i]//$'\\n'/ }}\" >&2; }}; "
    )
    return (
        "__anpord_n=0; __anpord_s=(); "
        + report
        + '__anpord_done() { trap - EXIT; __anpord_report "$@"; exit "$1"; }; '
        + "trap '__anpord_report $? 1' EXIT; "
        + "trap '[[ $BASH_COMMAND == __anpord* ]] || __anpord_s[__anpord_n++ % 32]=$BASH_COMMAND' DEBUG; "
        + cmd
        + '\n__anpord_ps=("${PIPESTATUS[@]}") __anpord_rc=$?\n'
        + '__anpord_done "$__anpord_rc" "${__anpord_ps[@]}"\n'
    )


def _take_step(stderr: str, nonce: str) -> tuple[str, str | None]:
    """Remove the marker line from stderr; return (clean stderr, step)."""
    at = stderr.rfind(nonce)
    if at < 0:
        return stderr, None
    end = stderr.find("\n", at)
    step = stderr[at + len(nonce) : end if end >= 0 else len(stderr)].strip() or None
    start = at - 1 if at > 0 and stderr[at - 1] == "\n" else at
    return stderr[:start] + (stderr[end + 1 :] if end >= 0 else ""), step


class CommandVerifier:
    """A shell check run in the trial's sandbox (see the module docstring)."""

    def __init__(self, cmd: str, *, timeout: float = 300, name: str | None = None):
        if not isinstance(cmd, str) or not cmd.strip():
            raise ValueError(f"command() needs a shell command, got {cmd!r}")
        if not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ValueError(
                f"command({cmd!r}): timeout must be a positive number of seconds, got {timeout!r}"
            )
        self.cmd = cmd
        self.timeout = float(timeout)
        self.name = name or cmd.strip()

    async def verify(self, sandbox: SandboxInstance | None) -> VerifierOutcome:
        if sandbox is None:
            return VerifierOutcome(self.name, "void", "no sandbox to run in")
        nonce = f"\x1fanpord-step-{secrets.token_hex(6)}:"
        try:
            result = await sandbox.exec(_script(self.cmd, nonce), timeout=self.timeout)
        except Exception as exc:  # noqa: BLE001 - a sandbox fault means it could not measure
            return VerifierOutcome(self.name, "void", _one_line(f"could not run: {exc}"))
        stderr, step = _take_step(result.stderr, nonce)
        result = replace(result, stderr=stderr)
        status, message = classify(self.cmd, result, step, self.timeout)
        return VerifierOutcome(
            self.name, status, _one_line(message), result, step if status != "passed" else None
        )

    def __repr__(self) -> str:
        return f"command({self.cmd!r})"


def command(cmd: str, *, timeout: float = 300, name: str | None = None) -> CommandVerifier:
    """A shell verifier: passes on exit 0, fails otherwise, ``void`` when it could not measure."""
    return CommandVerifier(cmd, timeout=timeout, name=name)
