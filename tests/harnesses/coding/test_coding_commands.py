"""The command lines built for each CLI, run as real processes (a stand-in executable reports the
argv, stdin and environment it got), and the CLI metadata."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from anpord.harnesses.coding import CODING_CLIS, Invocation, PromptError, SetupFile, parse_version

REPORTER = f"""#!{sys.executable}
import json, os, sys
json.dump({{"argv": sys.argv[1:], "stdin": sys.stdin.read(),
           "env": {{k: v for k, v in os.environ.items() if k.startswith(("IS_", "DISABLE_", "GEMINI_", "OPENCODE_"))}}}},
          sys.stdout)
"""
PROMPT = "-f looks like a flag\n'quotes' \"double\" $HOME `ticks` ünïcödé\n" + "x" * 200_000


@pytest.fixture
def reporter(tmp_path: Path) -> Path:
    exe = tmp_path / "cli-reporter"
    exe.write_text(REPORTER)
    exe.chmod(0o755)
    return exe


def run(invocation: Invocation) -> dict:
    env = {**os.environ, **invocation.env}
    with open(invocation.stdin or os.devnull, "rb") as stdin:
        out = subprocess.run(
            invocation.argv, stdin=stdin, env=env, capture_output=True, check=True, timeout=60
        )
    return json.loads(out.stdout)


@pytest.mark.parametrize("cli", sorted(CODING_CLIS))
def test_the_prompt_file_reaches_stdin_exactly(cli: str, reporter: Path, tmp_path: Path) -> None:
    prompt_file = tmp_path / "prompt.txt"
    prompt_file.write_text(PROMPT, encoding="utf-8")
    invocation = CODING_CLIS[cli].command(prompt_file=str(prompt_file), executable=str(reporter))
    got = run(invocation)
    assert got["stdin"] == PROMPT
    assert PROMPT not in " ".join(got["argv"])  # a huge prompt never travels as an argument
    # The same invocation as one shell command line gives the same argv and stdin.
    shell = subprocess.run(
        ["bash", "-c", invocation.shell()], capture_output=True, check=True, timeout=60
    )
    assert json.loads(shell.stdout)["argv"] == got["argv"]
    assert json.loads(shell.stdout)["stdin"] == PROMPT


@pytest.mark.parametrize("cli", sorted(CODING_CLIS))
def test_a_short_prompt_text_travels_as_one_argument(cli: str, reporter: Path) -> None:
    text = "-rf: delete 'nothing'; echo $HOME"
    got = run(CODING_CLIS[cli].command(prompt=text, executable=str(reporter)))
    assert got["stdin"] == ""
    assert got["argv"][-1] in (text, f"--prompt={text}")
    if got["argv"][-1] == text:
        assert got["argv"][-2] == "--"  # nothing after it is read as an option


def test_prompt_rules() -> None:
    for cli in CODING_CLIS.values():
        with pytest.raises(PromptError, match="needs a prompt"):
            cli.command()
        with pytest.raises(PromptError, match="NUL"):
            cli.command(prompt="a\0b")
        with pytest.raises(PromptError, match="prompt_file"):
            cli.command(prompt="x" * 100_001)


def test_claude_command_line() -> None:
    inv = CODING_CLIS["claude"].command(
        prompt_file="/p", model="sonnet", system_prompt="Be brief.", resume="s-1"
    )
    assert inv.argv == (
        "claude",
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--dangerously-skip-permissions",
        "--model",
        "sonnet",
        "--append-system-prompt",
        "Be brief.",
        "--resume",
        "s-1",
    )
    assert inv.stdin == "/p" and inv.files == ()
    assert inv.env == {"IS_SANDBOX": "1", "DISABLE_AUTOUPDATER": "1"}
    first = CODING_CLIS["claude"].command(prompt_file="/p")
    assert "--resume" not in first.argv and "--model" not in first.argv
    # A system prompt too long for an argument goes to the user-wide CLAUDE.md.
    huge = CODING_CLIS["claude"].command(prompt_file="/p", system_prompt="y" * 200_000)
    assert "--append-system-prompt" not in huge.argv
    assert huge.files == (SetupFile("home", ".claude/CLAUDE.md", "y" * 200_000),)


def test_codex_command_line() -> None:
    inv = CODING_CLIS["codex"].command(
        prompt_file="/p", model="gpt-5-codex", system_prompt="Be brief."
    )
    assert inv.argv == (
        "codex",
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
        "--model",
        "gpt-5-codex",
        "-",
    )
    assert inv.files == (SetupFile("home", ".codex/AGENTS.md", "Be brief."),)
    resumed = CODING_CLIS["codex"].command(prompt_file="/p", resume="019a2d7a")
    assert resumed.argv[-3:] == ("resume", "019a2d7a", "-")


def test_gemini_command_line() -> None:
    inv = CODING_CLIS["gemini"].command(
        prompt_file="/p", model="gemini-2.5-pro", system_prompt="Be brief.", resume="e09ec93c"
    )
    assert inv.argv == (
        "gemini",
        "--output-format",
        "stream-json",
        "--approval-mode=yolo",
        "--debug",
        "--model",
        "gemini-2.5-pro",
        "--resume",
        "e09ec93c",
    )
    assert inv.env == {"GEMINI_CLI_TRUST_WORKSPACE": "true"}
    assert inv.files == (SetupFile("home", ".gemini/GEMINI.md", "Be brief."),)


def test_opencode_command_line() -> None:
    inv = CODING_CLIS["opencode"].command(
        prompt_file="/p",
        model="anthropic/claude-sonnet-4-5",
        system_prompt="Be brief.",
        resume="ses_1",
    )
    assert inv.argv == (
        "opencode",
        "run",
        "--format",
        "json",
        "--model",
        "anthropic/claude-sonnet-4-5",
        "--session",
        "ses_1",
    )
    assert json.loads(inv.env["OPENCODE_PERMISSION"]) == {"*": "allow"}
    assert inv.files == (SetupFile("home", ".config/opencode/AGENTS.md", "Be brief."),)


@pytest.mark.parametrize(
    ("output", "version"),
    [
        ("2.1.197 (Claude Code)\n", "2.1.197"),
        ("codex-cli 0.171.0\n", "0.171.0"),
        ("0.61.0\n", "0.61.0"),
        ("1.18.33\n", "1.18.33"),
        ("opencode 0.0.0-dev-202601\n", "0.0.0-dev-202601"),
        ("command not found", None),
    ],
)
def test_version_from_the_version_output(output: str, version: str | None) -> None:
    assert parse_version(output) == version


def test_every_cli_says_how_to_sign_in_and_read_its_version() -> None:
    for name, cli in CODING_CLIS.items():
        info = cli.info
        assert info.name == name and info.executable == name
        assert info.version_argv == (name, "--version")
        assert info.credentials and all(group for group in info.credentials)
        assert info.notes
    assert ("ANTHROPIC_API_KEY",) in CODING_CLIS["claude"].info.credentials
    assert ("CLAUDE_CODE_OAUTH_TOKEN",) in CODING_CLIS["claude"].info.credentials
    assert ("CODEX_API_KEY",) in CODING_CLIS["codex"].info.credentials
    assert ("GEMINI_API_KEY",) in CODING_CLIS["gemini"].info.credentials
