"""One transcript shape for every CLI: a shell command that exits non-zero is a failed
``tool.result``, and ``command.completed`` holds the command's exit code and what it printed —
never a CLI's placeholder text (``Command exited with code: 4``, ``(no output)``).

Claude Code, Gemini CLI and OpenCode are recordings of the real CLIs (see
tests/fixtures/harness-streams/SOURCES.md); the codex lines (and a second OpenCode stream) follow
their documented item shapes.
"""

from __future__ import annotations

import pytest
from coding_support import line, of_type, run_stream, stream_lines

PRINTS_THEN_EXITS_3 = "printf 'some output\\n'; exit 3"


def _codex() -> list[str]:
    def item(iid: str, command: str, code: int, output: str) -> str:
        return line(
            type="item.completed",
            item={
                "id": iid,
                "type": "command_execution",
                "command": f"bash -lc {command!r}",
                "aggregated_output": output,
                "exit_code": code,
                "status": "failed" if code else "completed",
            },
        )

    return [
        line(type="thread.started", thread_id="t1"),
        item("i1", PRINTS_THEN_EXITS_3, 3, "some output\n"),
        item("i2", "exit 4", 4, ""),
        line(type="turn.completed", usage={"input_tokens": 1, "output_tokens": 1}),
    ]


def _opencode() -> list[str]:
    def bash(call: str, command: str, code: int, output: str) -> str:
        return line(
            type="tool_use",
            sessionID="s1",
            part={
                "type": "tool",
                "callID": call,
                "tool": "bash",
                "state": {
                    "status": "completed",  # opencode says completed whatever the exit code
                    "input": {"command": command},
                    "output": output,
                    "metadata": {"output": output, "exit": code},
                },
            },
        )

    return [
        bash("c1", PRINTS_THEN_EXITS_3, 3, "some output\n"),
        bash("c2", "exit 4", 4, "(no output)"),
        line(type="done", sessionID="s1"),
    ]


STREAMS = {
    "claude": lambda: stream_lines("claude-code/recorded__canned-model__bash-exit-codes.jsonl"),
    "codex": _codex,
    "gemini": lambda: stream_lines("gemini-cli/recorded__gemini-0.61-debug__tools.jsonl"),
    "opencode": lambda: stream_lines("opencode/recorded__opencode-1.18.33__bash-exit-codes.jsonl"),
    "opencode-built": _opencode,
}
CLI = {"opencode-built": "opencode"}


@pytest.mark.parametrize("cli", sorted(STREAMS))
def test_a_failing_shell_command_reads_the_same_from_every_cli(cli: str) -> None:
    events, end = run_stream(CLI.get(cli, cli), STREAMS[cli]())
    commands = of_type(events, "command.completed")
    first, second = commands[0], commands[1]
    assert (first["exit_code"], first["output"].strip()) == (3, "some output")
    assert (second["exit_code"], second["output"]) == (4, "")
    results = {r["call_id"]: r for r in of_type(events, "tool.result")}
    for command in (first, second):
        result = results[command["call_id"]]
        assert result["status"] == "failed", (cli, result)
        assert result["error"], (cli, result)
    assert end.status == "completed"
