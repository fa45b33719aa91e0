"""Gemini CLI's stream-json into anpord events.

The ``recorded__*`` streams are real Gemini CLI 0.61.0 output against a canned model (see
tests/fixtures/harness-streams/SOURCES.md). The other tests build streams from the documented
schema (gemini-cli ``packages/core/src/output/types.ts``: init, message, tool_use, tool_result,
error, result); they are not recordings.
"""

from __future__ import annotations

from coding_support import anpord_events, line, of_type, run_stream, stream_lines

TS = "2026-01-01T00:00:00.000Z"


def test_a_recorded_run_with_shell_commands_and_a_file_write() -> None:
    events, end = run_stream(
        "gemini",
        stream_lines("gemini-cli/recorded__canned-model__tools.jsonl"),
        workspace="/tmp/rec/gem/ws",
    )
    first = "run_shell_command__run_shell_command_1796021635840_0"
    second = "run_shell_command__run_shell_command_1796021636237_0"
    write = "write_file__write_file_1796021636324_0"
    assert anpord_events(events) == [
        (
            "tool.called",
            {
                "call_id": first,
                "name": "run_shell_command",
                "input": {"command": "printf 'some output\\n'; exit 3", "description": "run it"},
            },
        ),
        (
            "tool.result",
            {
                "call_id": first,
                "name": "run_shell_command",
                "output": "some output",
                "status": "completed",
                "error": None,
            },
        ),
        # Without --debug, gemini shows a command's output and not its code: exit 3 is not in
        # this stream (the harness runs gemini with --debug, recorded below).
        (
            "command.completed",
            {
                "command": "printf 'some output\\n'; exit 3",
                "exit_code": None,
                "output": "some output",
                "call_id": first,
            },
        ),
        (
            "tool.called",
            {
                "call_id": second,
                "name": "run_shell_command",
                "input": {"command": "exit 4", "description": "run it"},
            },
        ),
        (
            "tool.result",
            {
                "call_id": second,
                "name": "run_shell_command",
                "output": "",
                "status": "failed",
                "error": "exit code 4",
            },
        ),
        # gemini's placeholder for a silent command is not output; its code fails the result.
        (
            "command.completed",
            {
                "command": "exit 4",
                "exit_code": 4,
                "output": "",
                "call_id": second,
            },
        ),
        (
            "tool.called",
            {
                "call_id": write,
                "name": "write_file",
                "input": {
                    "file_path": "/tmp/rec/gem/ws/notes.txt",
                    "content": "hello from the canned model\n",
                },
            },
        ),
        (
            "tool.result",
            {
                "call_id": write,
                "name": "write_file",
                "output": "",
                "status": "completed",
                "error": None,
            },
        ),
        ("files.changed", {"paths": ["notes.txt"]}),
        # Two delta chunks, one message.
        ("message.completed", {"role": "assistant", "text": "Done: notes.txt written."}),
        (
            "usage",
            {"input_tokens": 806, "output_tokens": 48, "cost": None, "cached_input_tokens": 200},
        ),
    ]
    # The echoed prompt is kept raw, not recorded as a message.
    assert events[1].type == "gemini.message" and events[1].data["raw"]["role"] == "user"
    assert end.status == "completed" and end.message == "Done: notes.txt written."
    assert end.resume == "e09ec93c-4cc8-43c7-af0a-0a784fea7433"
    assert end.usage == {"input_tokens": 806, "output_tokens": 48, "cached_input_tokens": 200}


def test_a_recorded_resumed_turn_keeps_the_session() -> None:
    events, end = run_stream(
        "gemini", stream_lines("gemini-cli/recorded__canned-model__resumed.jsonl")
    )
    assert end.status == "completed" and end.message == "Second turn: still here."
    assert end.resume == "e09ec93c-4cc8-43c7-af0a-0a784fea7433"
    assert of_type(events, "usage") == [
        {"input_tokens": 206, "output_tokens": 12, "cost": None, "cached_input_tokens": 50}
    ]


def test_a_recorded_debug_run_gives_every_shell_command_its_exit_code_and_output() -> None:
    events, end = run_stream(
        "gemini",
        stream_lines("gemini-cli/recorded__gemini-0.61-debug__tools.jsonl"),
        workspace="/tmp/rec/gem/ws",
    )
    commands = [
        (c["command"], c["exit_code"], c["output"]) for c in of_type(events, "command.completed")
    ]
    assert commands == [
        ("printf 'some output\\n'; exit 3", 3, "some output"),
        ("exit 4", 4, ""),
        ("echo fine", 0, "fine"),
    ]
    results = [(r["name"], r["status"], r["output"], r["error"]) for r in of_type(events, "tool.result")]
    assert results == [
        ("run_shell_command", "failed", "some output", "some output"),
        ("run_shell_command", "failed", "", "exit code 4"),
        ("run_shell_command", "completed", "fine", None),
        ("write_file", "completed", "", None),
    ]
    assert of_type(events, "files.changed") == [{"paths": ["notes.txt"]}]
    # total_tokens 585 = input 500 + output 50 + 35 thinking tokens: output counts the thinking.
    assert of_type(events, "usage") == [
        {
            "input_tokens": 500,
            "output_tokens": 85,
            "cost": None,
            "cached_input_tokens": 0,
            "reasoning_output_tokens": 35,
        }
    ]
    assert end.status == "completed" and end.message == "Done: notes.txt written."


def test_a_recorded_error_result_fails_the_turn() -> None:
    _, end = run_stream(
        "gemini", stream_lines("gemini-cli/recorded__canned-model__model-not-found.jsonl"), 1
    )
    assert end.status == "failed"
    assert end.error == "unknown: [API Error: models/no-such-model is not found]"
    assert end.resume == "a3202cc9-f4aa-47bd-926b-8d321c092b92"


# -- streams built from the documented schema (not recordings) ----------------------------------


def test_documented_stream_text_around_a_tool_call_makes_two_messages() -> None:
    lines = [
        line(type="init", timestamp=TS, session_id="sess-1", model="gemini-2.5-pro"),
        line(type="message", timestamp=TS, role="user", content="Stream test"),
        line(type="message", timestamp=TS, role="assistant", content="Thinking...", delta=True),
        line(
            type="tool_use",
            timestamp=TS,
            tool_name="replace",
            tool_id="tool-1",
            parameters={"file_path": "src/app.py", "old_string": "a", "new_string": "b"},
        ),
        line(
            type="tool_result", timestamp=TS, tool_id="tool-1", status="success", output="Edited."
        ),
        line(type="message", timestamp=TS, role="assistant", content="Final ", delta=True),
        line(type="message", timestamp=TS, role="assistant", content="answer", delta=True),
        line(
            type="result",
            timestamp=TS,
            status="success",
            stats={
                "total_tokens": 30,
                "input_tokens": 20,
                "output_tokens": 10,
                "cached": 0,
                "input": 20,
                "duration_ms": 5,
                "tool_calls": 1,
                "models": {},
            },
        ),
    ]
    events, end = run_stream("gemini", lines)
    assert [m["text"] for m in of_type(events, "message.completed")] == [
        "Thinking...",
        "Final answer",
    ]
    assert of_type(events, "files.changed") == [{"paths": ["src/app.py"]}]
    assert end.status == "completed" and end.message == "Final answer" and end.resume == "sess-1"


def test_documented_error_events_warning_kept_error_fails() -> None:
    warning = [
        line(type="init", timestamp=TS, session_id="s", model="m"),
        line(
            type="error",
            timestamp=TS,
            severity="warning",
            message="Loop detected, stopping execution",
        ),
        line(
            type="result",
            timestamp=TS,
            status="success",
            stats={"input_tokens": 0, "output_tokens": 0},
        ),
    ]
    events, end = run_stream("gemini", warning)
    assert end.status == "completed"
    assert any(e.type == "gemini.error" for e in events)

    # Gemini reports this one as severity error and then a result that says success.
    max_turns = [
        line(type="init", timestamp=TS, session_id="s", model="m"),
        line(
            type="error", timestamp=TS, severity="error", message="Maximum session turns exceeded"
        ),
        line(
            type="result",
            timestamp=TS,
            status="success",
            stats={"input_tokens": 0, "output_tokens": 0},
        ),
    ]
    _, end = run_stream("gemini", max_turns, exit_code=53)
    assert end.status == "failed" and end.error == "Maximum session turns exceeded"


def test_documented_failed_tool_and_shell_codes() -> None:
    lines = [
        line(
            type="tool_use",
            timestamp=TS,
            tool_name="run_shell_command",
            tool_id="t1",
            parameters={"command": "true"},
        ),
        line(type="tool_result", timestamp=TS, tool_id="t1", status="success", output=""),
        line(
            type="tool_use",
            timestamp=TS,
            tool_name="run_shell_command",
            tool_id="t2",
            parameters={"command": "nope"},
        ),
        line(
            type="tool_result",
            timestamp=TS,
            tool_id="t2",
            status="error",
            error={"type": "shell_execute_error", "message": "spawn failed"},
        ),
        line(
            type="tool_use",
            timestamp=TS,
            tool_name="run_shell_command",
            tool_id="t3",
            parameters={"command": "make"},
        ),
        # Debug mode shows the model's view: output, then a non-zero code.
        line(
            type="tool_result",
            timestamp=TS,
            tool_id="t3",
            status="success",
            output="Output: boom\nExit Code: 2",
        ),
        line(
            type="tool_use",
            timestamp=TS,
            tool_name="write_file",
            tool_id="t4",
            parameters={"file_path": "x.txt"},
        ),
        line(
            type="tool_result",
            timestamp=TS,
            tool_id="t4",
            status="error",
            error={"type": "permission_denied", "message": "denied"},
        ),
    ]
    events, end = run_stream("gemini", lines)
    assert [(c["exit_code"], c["output"]) for c in of_type(events, "command.completed")] == [
        (0, ""),
        (None, ""),
        (2, "boom"),
    ]
    results = of_type(events, "tool.result")
    assert [(r["status"], r["error"]) for r in results] == [
        ("completed", None),
        ("failed", "spawn failed"),
        ("failed", "boom"),  # exit 2 fails the result, as for every CLI
        ("failed", "denied"),
    ]
    assert of_type(events, "files.changed") == []  # the write failed
    assert (
        end.status == "failed"
        and end.error == "gemini exited with code 0 before its final result event"
    )


def test_a_stream_cut_mid_answer_keeps_the_partial_text_in_the_turn_end() -> None:
    lines = [
        line(type="init", timestamp=TS, session_id="s", model="m"),
        line(type="message", timestamp=TS, role="assistant", content="Half an ans", delta=True),
    ]
    events, end = run_stream("gemini", lines, exit_code=None)
    assert of_type(events, "message.completed") == []
    assert end.status == "failed" and end.message == "Half an ans"
    assert end.error == "gemini was killed before its final result event"
