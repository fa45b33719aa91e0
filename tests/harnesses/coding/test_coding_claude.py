"""Claude Code's stream-json, from real recordings, into anpord events and a TurnEnd."""

from __future__ import annotations

import pytest
from coding_support import anpord_events, line, of_type, run_stream, stream_lines

ARCH = "claude-code/mixofreality-studio__archistrator__"
GLEAM = "claude-code/charlieyou__claude-agent-sdk-gleam__"


def test_a_run_that_writes_a_file_with_init_after_hooks_and_type_last() -> None:
    events, end = run_stream("claude", stream_lines(ARCH + "success_with_tools.jsonl"))
    # init is line 5 (after hook lines): its cwd still makes the Write path workspace-relative.
    assert anpord_events(events) == [
        (
            "message.completed",
            {
                "role": "assistant",
                "text": "This is a trivial file operation, not creative or debugging work, so no skill applies here.",
            },
        ),
        (
            "tool.called",
            {
                "call_id": "toolu_01Rjuz3fMBrwLKR72uHAcnmH",
                "name": "Write",
                "input": {"file_path": "/scrubbed/hello.txt", "content": "hi"},
            },
        ),
        (
            "tool.result",
            {
                "call_id": "toolu_01Rjuz3fMBrwLKR72uHAcnmH",
                "name": "Write",
                "output": "File created successfully at: /scrubbed/hello.txt (file state is current in "
                "your context — no need to Read it back)",
                "status": "completed",
                "error": None,
            },
        ),
        ("files.changed", {"paths": ["hello.txt"]}),
        (
            "message.completed",
            {
                "role": "assistant",
                "text": "The tool result confirms the file is `hi` — read-back not needed since it's already "
                'current in context. Created `hello.txt` with contents "hi".',
            },
        ),
        (
            "usage",
            {
                "input_tokens": 4 + 63600 + 5424,
                "output_tokens": 171,
                "cost": 0.054201000000000006,
                "cached_input_tokens": 63600,
                "cache_write_input_tokens": 5424,
            },
        ),
    ]
    assert end.status == "completed"
    assert end.message == (
        "The tool result confirms the file is `hi` — read-back not needed since it's already current in "
        'context. Created `hello.txt` with contents "hi".'
    )
    assert end.resume == "d0becfe3-d703-4311-8d8f-bf0ed7139dd7"
    assert end.error is None
    assert end.usage == {
        "input_tokens": 69028,
        "output_tokens": 171,
        "cached_input_tokens": 63600,
        "cache_write_input_tokens": 5424,
        "cost": 0.054201000000000006,
    }
    # Lines anpord has no event for are kept raw, named after their type.
    raw_types = [e.type for e in events if "raw" in e.data]
    assert raw_types.count("claude.rate_limit_event") == 2
    assert raw_types.count("claude.system") == 5  # two hook_started, two hook_response, init
    assert raw_types[-1] == "claude.result"


def test_usage_is_counted_once_for_a_response_split_over_lines() -> None:
    # Both lines of msg_011CdeZ44G5n3VmRyeeUj6Hk repeat the same per-message usage; only the
    # result's aggregate is recorded.
    events, _ = run_stream("claude", stream_lines(ARCH + "success_with_tools.jsonl"))
    assert len(of_type(events, "usage")) == 1


def test_a_subagent_run_counts_the_subagents_tokens_and_keeps_its_lines_out_of_the_answer() -> None:
    events, end = run_stream("claude", stream_lines(ARCH + "success_with_subagent.jsonl"))
    (call,) = of_type(events, "tool.called")
    assert call["name"] == "Agent" and call["call_id"] == "toolu_01DL6Gqvj23os5rsNRhFSTmy"
    assert call["input"]["prompt"] == "What is 2+2? Reply with just the numeric answer."
    (result,) = of_type(events, "tool.result")
    # An array of text blocks becomes their text, one per line.
    assert result["output"].startswith("4\nagentId: a9539052038e7434d")
    assert result["status"] == "completed" and result["name"] == "Agent"
    # Only the main thread's text is an assistant message; the thinking-only line stays raw.
    assert [m["text"] for m in of_type(events, "message.completed")] == [
        "The subagent answered: **4**."
    ]
    assert any(e.type == "claude.assistant" and "thinking" in str(e.data["raw"]) for e in events)
    # modelUsage counts the subagent too: 6 input, 269 output (result.usage says 4 and 266).
    (usage,) = of_type(events, "usage")
    assert usage["input_tokens"] == 6 + 63944 + 21022 and usage["output_tokens"] == 269
    assert usage["cost"] == pytest.approx(0.11543595)
    assert end.status == "completed" and end.message == "The subagent answered: **4**."
    assert end.resume == "bda495be-48e6-4476-8117-9e8459107b7d"


def test_an_api_error_reported_with_subtype_success_fails_the_turn() -> None:
    events, end = run_stream("claude", stream_lines(ARCH + "failure.jsonl"), exit_code=1)
    assert end.status == "failed"
    assert end.error is not None
    assert end.error.startswith(
        "API error 404: There's an issue with the selected model (no-such-model)."
    )
    assert end.message is None
    assert end.resume == "7a995c26-c485-4c08-aa33-071588978c49"
    # The synthetic assistant message is not an answer: kept raw, no message.completed.
    assert of_type(events, "message.completed") == []
    assert any(
        e.type == "claude.assistant" and e.data["raw"]["is_api_error_message"] for e in events
    )
    # A reported cost of 0 with no tokens is a real 0.
    assert of_type(events, "usage") == [
        {
            "input_tokens": 0,
            "output_tokens": 0,
            "cost": 0,
            "cached_input_tokens": 0,
            "cache_write_input_tokens": 0,
        }
    ]


def test_the_same_failure_recorded_from_a_current_claude_code() -> None:
    events, end = run_stream(
        "claude", stream_lines("claude-code/recorded__canned-model__model-not-found.jsonl"), 1
    )
    assert end.status == "failed"
    assert end.error == (
        "API error 404: There's an issue with the selected model (no-such-model). It may not exist or you "
        "may not have access to it. Run --model to pick a different model."
    )
    assert end.resume == "c6a89ab5-f46b-45ed-a014-4b217a720d4a"


def test_shell_exit_codes_read_from_the_bash_results_text() -> None:
    events, end = run_stream(
        "claude", stream_lines("claude-code/recorded__canned-model__bash-exit-codes.jsonl")
    )
    assert of_type(events, "command.completed") == [
        {
            "command": "printf 'some output\\n'; exit 3",
            "exit_code": 3,
            "output": "some output",
            "call_id": "toolu_0",
        },
        {"command": "exit 4", "exit_code": 4, "output": "", "call_id": "toolu_1"},
    ]
    results = of_type(events, "tool.result")
    assert [(r["name"], r["status"]) for r in results] == [
        ("Bash", "failed"),
        ("Bash", "failed"),
        ("Write", "completed"),
    ]
    assert results[0]["error"] == "Exit code 3\nsome output"
    # The workspace is the init line's cwd.
    assert of_type(events, "files.changed") == [{"paths": ["notes.txt"]}]
    assert end.status == "completed" and end.message == "Done: notes.txt written."
    assert end.resume == "e33d7911-1906-43cc-abda-1315e69a4778"
    assert end.usage == {
        "input_tokens": 406,
        "output_tokens": 80,
        "cached_input_tokens": 0,
        "cache_write_input_tokens": 0,
        "cost": 0.002418,
    }


def test_a_resumed_turn_keeps_the_session_and_reports_only_its_own_cost() -> None:
    _, end = run_stream("claude", stream_lines("claude-code/recorded__canned-model__resumed.jsonl"))
    assert end.status == "completed" and end.message == "Second turn: still here."
    assert end.resume == "e33d7911-1906-43cc-abda-1315e69a4778"
    assert end.usage["cost"] == 0.000609 and end.usage["input_tokens"] == 103


def test_a_successful_bash_call_without_an_exit_code_field_is_exit_0() -> None:
    lines = [
        stream_lines(GLEAM + name)[0]
        for name in (
            "system_message.json",
            "assistant_message.json",
            "user_message.json",
            "result_success.json",
        )
    ]
    events, end = run_stream("claude", lines)
    (command,) = of_type(events, "command.completed")
    assert command["command"] == "ls -la" and command["exit_code"] == 0
    assert command["output"].startswith(
        "total 1976\ndrwxrwxr-x  9 cyou cyou"
    )  # tool_use_result stdout
    assert (
        end.status == "completed" and end.message == "Here are the files in the current directory."
    )
    # total_cost_usd is the cost, not the sum of modelUsage costUSD (0.228...).
    assert end.usage["cost"] == 0.24722425
    assert end.usage["output_tokens"] == 765 and end.usage["input_tokens"] == 38 + 28775 + 31159


def test_an_older_run_cut_before_its_result_is_a_failed_turn() -> None:
    events, end = run_stream(
        "claude",
        stream_lines("claude-code/time4Wiley__claude-flow__hello-world-swarm-excerpt.jsonl"),
    )
    assert end.status == "failed"
    assert end.error == "claude exited with code 0 before its final result event"
    assert end.resume == "8968df46-83ce-4c0d-bc95-2074e4bd6b1d"
    assert end.usage == {}
    calls = of_type(events, "tool.called")
    assert len(calls) == 21
    assert [c["name"] for c in calls].count("Write") == 5
    assert calls[0] == {
        "call_id": "toolu_01LDWR9b7DPfxQ3swSWWfxhY",
        "name": "claude-flow.swarm_init",  # an MCP tool: <server>.<tool> in every harness
        "input": {"topology": "mesh", "maxAgents": 5, "strategy": "adaptive"},
    }
    # Nine calls got their results; the Writes' results were cut off, so no file counts as changed.
    assert len(of_type(events, "tool.result")) == 9
    assert of_type(events, "files.changed") == []
    # The Bash call's result never came either: no command.completed.
    assert of_type(events, "command.completed") == []
    assert [m["text"][:30] for m in of_type(events, "message.completed")] == [
        "I'll create a concurrent agent",
        "Now I'll spawn the actual Task",
    ]


@pytest.mark.parametrize(
    ("tool_result", "structured", "expected"),
    [
        ({"content": "Exit code 2\nmake: *** [test] Error 2", "is_error": True}, None, 2),
        (
            {"content": "ok", "is_error": False},
            {"stdout": "ok", "stderr": "", "interrupted": False},
            0,
        ),
        # grep matched nothing: Claude Code calls it no error, and names no code.
        (
            {"content": "(Bash completed with no output)", "is_error": False},
            {"stdout": "", "returnCodeInterpretation": "No matches found"},
            None,
        ),
        ({"content": "Command timed out after 2m 0s", "is_error": True}, None, None),
        (
            {"content": "Command running in background with ID: b1", "is_error": False},
            {"stdout": "", "backgroundTaskId": "b1"},
            None,
        ),
        (
            {"content": "", "is_error": False},
            {"stdout": "", "returnCodeInterpretation": "exited with code 7"},
            7,
        ),
    ],
)
def test_bash_exit_code_rules(
    tool_result: dict, structured: dict | None, expected: int | None
) -> None:
    lines = [
        line(
            type="assistant",
            message={
                "id": "m1",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "t1",
                        "name": "Bash",
                        "input": {"command": "make test"},
                    }
                ],
            },
        ),
        line(
            type="user",
            message={"content": [{"type": "tool_result", "tool_use_id": "t1", **tool_result}]},
            **({"tool_use_result": structured} if structured is not None else {}),
        ),
    ]
    events, _ = run_stream("claude", lines)
    (command,) = of_type(events, "command.completed")
    assert command["exit_code"] == expected


def test_edit_and_multiedit_results_change_files_but_a_failed_edit_does_not() -> None:
    lines = [
        line(type="system", subtype="init", cwd="/w", session_id="s1"),
        line(
            type="assistant",
            message={
                "id": "m1",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "e1",
                        "name": "Edit",
                        "input": {"file_path": "/w/src/a.py"},
                    },
                    {
                        "type": "tool_use",
                        "id": "e2",
                        "name": "MultiEdit",
                        "input": {"file_path": "/w/b.py"},
                    },
                    {
                        "type": "tool_use",
                        "id": "e3",
                        "name": "Edit",
                        "input": {"file_path": "/w/c.py"},
                    },
                    {
                        "type": "tool_use",
                        "id": "e4",
                        "name": "Write",
                        "input": {"file_path": "/elsewhere/d.txt"},
                    },
                ],
            },
        ),
        line(
            type="user",
            message={
                "content": [
                    {"type": "tool_result", "tool_use_id": "e1", "content": "ok"},
                    {"type": "tool_result", "tool_use_id": "e2", "content": "ok"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "e3",
                        "content": "File has not been read yet",
                        "is_error": True,
                    },
                    {"type": "tool_result", "tool_use_id": "e4", "content": "ok"},
                ]
            },
        ),
    ]
    events, _ = run_stream("claude", lines)
    assert of_type(events, "files.changed") == [
        {"paths": ["src/a.py"]},
        {"paths": ["b.py"]},
        {"paths": ["/elsewhere/d.txt"]},
    ]
    assert of_type(events, "tool.result")[2]["error"] == "File has not been read yet"


def test_an_older_result_without_total_cost_usd_and_error_subtypes() -> None:
    old = line(
        type="result",
        subtype="success",
        cost_usd=0.0031,
        is_error=False,
        duration_ms=10,
        num_turns=2,
        result="done",
        session_id="s-old",
        total_cost=0.0031,
    )
    events, end = run_stream("claude", [old])
    assert of_type(events, "usage") == [
        {"input_tokens": None, "output_tokens": None, "cost": 0.0031}
    ]
    assert end.status == "completed" and end.message == "done" and end.resume == "s-old"

    no_cost = line(
        type="result",
        subtype="success",
        is_error=False,
        result="x",
        session_id="s2",
        usage={"input_tokens": 10, "output_tokens": 3},
    )
    events, end = run_stream("claude", [no_cost])
    assert of_type(events, "usage") == [
        {
            "input_tokens": 10,
            "output_tokens": 3,
            "cost": None,
            "cached_input_tokens": 0,
            "cache_write_input_tokens": 0,
        }
    ]

    # error_max_turns was once sent with is_error false: still a failed turn.
    max_turns = line(
        type="result", subtype="error_max_turns", is_error=False, num_turns=5, session_id="s3"
    )
    _, end = run_stream("claude", [max_turns])
    assert end.status == "failed" and end.error == "error_max_turns (after 5 turns)"

    errors = line(
        type="result",
        subtype="error_during_execution",
        is_error=True,
        session_id="s4",
        errors=["No conversation found with session ID: abc"],
    )
    _, end = run_stream("claude", [errors])
    assert end.status == "failed" and end.error == "No conversation found with session ID: abc"


def test_a_success_result_then_a_non_zero_exit_fails_closed() -> None:
    _, end = run_stream(
        "claude", [line(type="result", subtype="success", is_error=False, result="ok")], exit_code=2
    )
    assert (
        end.status == "failed" and end.error == "claude exited with code 2 after reporting success"
    )


def test_structured_output_is_the_turns_data() -> None:
    _, end = run_stream(
        "claude",
        [
            line(
                type="result",
                subtype="success",
                is_error=False,
                result="{}",
                structured_output={"answer": 4},
            )
        ],
    )
    assert end.data == {"answer": 4}


def test_claude_codes_placeholder_for_an_empty_result_is_no_output() -> None:
    # Claude Code 2.1.197 replaces an empty tool result with "(Bash completed with no output)".
    lines = [
        line(type="assistant", session_id="s", message={"id": "m1", "content": [
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "true"}}]}),
        line(type="user", session_id="s", message={"content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "(Bash completed with no output)",
             "is_error": False}]}),
        line(type="result", subtype="success", is_error=False, session_id="s", result="ok"),
    ]
    events, end = run_stream("claude", lines)
    assert of_type(events, "command.completed") == [
        {"command": "true", "exit_code": 0, "output": "", "call_id": "t1"}
    ]
    assert end.status == "completed"
